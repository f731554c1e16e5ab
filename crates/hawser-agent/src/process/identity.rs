//! Telling the HAProxy processes of one layout from every other process,
//! through `/proc`, and signalling only them.
//!
//! A pid alone is not an identity: pids are reused, and a pid file may name
//! any process. A process is ours when its command line carries our binary's
//! name and `-C <config_dir>` (whatever its `-S`: a master on our tree is
//! ours to adopt or stop, so that one tree never has two), and it stays the same
//! process only while its start time (field 22 of `/proc/<pid>/stat`) does.
//! Every signal is preceded by that check, and pid 0, negative pids and our
//! own pid are never signalled.

use std::{
    ffi::{OsStr, OsString},
    fs,
    os::unix::ffi::OsStrExt,
    path::Path,
};

use nix::{
    errno::Errno,
    sys::signal::{self, Signal},
    unistd::Pid,
};

use super::ProcessError;

/// One process, pinned by its start time so a reused pid is not mistaken
/// for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ProcessIdentity {
    pub(super) pid: u32,
    start_time: u64,
    pgrp: u32,
}

/// The fields of `/proc/<pid>/stat` supervision needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    pub(super) state: char,
    pub(super) ppid: u32,
    pub(super) pgrp: u32,
    pub(super) start_time: u64,
}

impl Stat {
    /// Zombies (`Z`) and dying tasks (`X`) still answer `kill(pid, 0)` but
    /// are gone for our purposes.
    fn is_running(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// The command-line marks of the HAProxy processes of one layout.
#[derive(Debug, Clone)]
pub(super) struct Signature<'a> {
    pub(super) binary_name: &'a OsStr,
    pub(super) config_dir: &'a Path,
}

impl Signature<'_> {
    /// True when `argv` is an HAProxy started with this layout's `-C` (the
    /// master re-execs with extra `-sf`/`-x` arguments, and workers share
    /// the master's command line).
    pub(super) fn matches(&self, argv: &[OsString]) -> bool {
        let Some(program) = argv.first() else {
            return false;
        };
        if Path::new(program).file_name() != Some(self.binary_name) {
            return false;
        }
        argv.windows(2)
            .any(|pair| pair[0] == "-C" && pair[1] == self.config_dir.as_os_str())
    }
}

impl ProcessIdentity {
    /// The running process `pid`, if there is one (not a zombie).
    pub(super) fn of(pid: u32) -> Option<Self> {
        nix_pid(pid)?;
        let stat = read_stat(pid)?;
        stat.is_running().then_some(Self {
            pid,
            start_time: stat.start_time,
            pgrp: stat.pgrp,
        })
    }

    /// True while this very process runs: the pid exists, is not a zombie
    /// and was started when this one was.
    pub(super) fn is_alive(&self) -> bool {
        let Some(pid) = nix_pid(self.pid) else {
            return false;
        };
        if signal::kill(pid, None) == Err(Errno::ESRCH) {
            return false;
        }
        read_stat(self.pid)
            .is_some_and(|stat| stat.is_running() && stat.start_time == self.start_time)
    }

    /// Sends `signal` if this process still runs; `Ok(false)` when it is gone.
    pub(super) fn signal(&self, signal: Signal) -> Result<bool, ProcessError> {
        let Some(pid) = nix_pid(self.pid).filter(|_| self.is_alive()) else {
            return Ok(false);
        };
        match signal::kill(pid, signal) {
            Ok(()) => Ok(true),
            Err(Errno::ESRCH) => Ok(false),
            Err(source) => Err(ProcessError::Signal {
                pid: self.pid,
                signal,
                source,
            }),
        }
    }

    /// SIGKILLs the process and, when it leads its own process group (as
    /// every master we spawn does), the whole group: its workers with it.
    pub(super) fn kill_with_group(&self) -> Result<bool, ProcessError> {
        let Some(pid) = nix_pid(self.pid).filter(|_| self.is_alive()) else {
            return Ok(false);
        };
        let result = if self.pgrp == self.pid {
            // The live leader holds the group id: it cannot name anyone else.
            signal::killpg(pid, Signal::SIGKILL)
        } else {
            signal::kill(pid, Signal::SIGKILL)
        };
        match result {
            Ok(()) => Ok(true),
            Err(Errno::ESRCH) => Ok(false),
            Err(source) => Err(ProcessError::Signal {
                pid: self.pid,
                signal: Signal::SIGKILL,
                source,
            }),
        }
    }
}

/// Every running process carrying `signature`, with its parent pid.
pub(super) fn scan(signature: &Signature<'_>) -> Vec<(ProcessIdentity, u32)> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let own = std::process::id();
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
            .filter(|&pid| pid != own)
        else {
            continue;
        };
        if !read_cmdline(pid).is_some_and(|argv| signature.matches(&argv)) {
            continue;
        }
        if let Some(stat) = read_stat(pid).filter(Stat::is_running) {
            let identity = ProcessIdentity {
                pid,
                start_time: stat.start_time,
                pgrp: stat.pgrp,
            };
            found.push((identity, stat.ppid));
        }
    }
    found
}

/// The masters among `processes`: those whose parent is not one of them
/// (a worker orphaned by a dead master counts too; it must go as well).
pub(super) fn masters(processes: &[(ProcessIdentity, u32)]) -> Vec<ProcessIdentity> {
    processes
        .iter()
        .filter(|(_, ppid)| !processes.iter().any(|(other, _)| other.pid == *ppid))
        .map(|(identity, _)| *identity)
        .collect()
}

/// A pid that is safe to pass to `kill(2)`: positive, not ours.
fn nix_pid(pid: u32) -> Option<Pid> {
    let raw = i32::try_from(pid).ok().filter(|&raw| raw > 0)?;
    (pid != std::process::id()).then(|| Pid::from_raw(raw))
}

fn read_stat(pid: u32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn read_cmdline(pid: u32) -> Option<Vec<OsString>> {
    let raw = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    Some(
        raw.split(|&byte| byte == 0)
            .filter(|arg| !arg.is_empty())
            .map(|arg| OsStr::from_bytes(arg).to_owned())
            .collect(),
    )
}

/// Parses `pid (comm) state ppid pgrp ... starttime ...`; `comm` may hold
/// spaces and parentheses, so fields are counted after the last `)`.
pub(super) fn parse_stat(text: &str) -> Option<Stat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the comm: state is field 3 of the man page, so field N is at N - 3.
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}
