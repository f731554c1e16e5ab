//! Resource limits of a sandboxed child: CPU seconds, address space, the
//! size of any file it writes, and its CPU priority.
//!
//! They are set with `prlimit(2)` (and `setpriority(2)`) on the child right
//! after it starts, from the thread that started it: rlimits belong to the
//! whole process, so setting them on the parent would bound hawser itself,
//! and setting them between fork and exec needs a `pre_exec` hook, which
//! needs `unsafe`. The window is the time from exec to the next system call
//! of the spawning thread; CPU time spent in it still counts against the
//! CPU limit, and the check's timeout bounds the wall clock whatever
//! happens.

use std::io;

use rlimit::Resource;
use tokio::process::Child;

/// Resource limits of a sandboxed child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// CPU seconds; past them the kernel sends `SIGXCPU`, one second later `SIGKILL`.
    pub cpu_seconds: u64,
    /// Bytes of virtual memory; allocations past it fail.
    pub address_space_bytes: u64,
    /// Largest file the child may write, in bytes (it has nowhere to write
    /// under Landlock: this bounds it where Landlock is missing).
    pub file_size_bytes: u64,
    /// How many steps of `nice` below hawser's own CPU priority the child
    /// runs: 0, the same. A check nobody waits for (the full check after a
    /// runtime change) runs below, so that the traffic HAProxy serves on
    /// the same CPUs does not wait for it.
    pub niceness: i32,
}

impl Default for Limits {
    /// 60 CPU seconds, 4 GiB of address space (HAProxy reserves a stack
    /// and an allocator arena per thread), files of at most 1 MiB, hawser's
    /// own CPU priority.
    fn default() -> Self {
        Self {
            cpu_seconds: 60,
            address_space_bytes: 4 << 30,
            file_size_bytes: 1 << 20,
            niceness: 0,
        }
    }
}

impl Limits {
    /// Sets the limits on `child`. A child that is already gone (or reaped)
    /// has nothing left to limit.
    pub(super) fn apply(&self, child: &Child) -> io::Result<()> {
        let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) else {
            return Ok(());
        };
        let limits = [
            (
                Resource::CPU,
                self.cpu_seconds,
                self.cpu_seconds.saturating_add(1),
            ),
            (
                Resource::AS,
                self.address_space_bytes,
                self.address_space_bytes,
            ),
            (Resource::FSIZE, self.file_size_bytes, self.file_size_bytes),
        ];
        for (resource, soft, hard) in limits {
            match lower(pid, resource, soft, hard) {
                Err(error) if error.raw_os_error() == Some(ESRCH) => return Ok(()),
                other => other?,
            }
        }
        match lower_priority(pid, self.niceness) {
            Err(error) if error.raw_os_error() == Some(ESRCH) => Ok(()),
            other => other,
        }
    }
}

/// Runs `pid` `niceness` steps below this process's CPU priority (lowering
/// a priority needs no privilege; raising one is never asked for).
fn lower_priority(pid: i32, niceness: i32) -> io::Result<()> {
    use rustix::process::{Pid, getpriority_process, setpriority_process};
    if niceness <= 0 {
        return Ok(());
    }
    let own = getpriority_process(None)?;
    setpriority_process(Pid::from_raw(pid), own.saturating_add(niceness).min(19))?;
    Ok(())
}

/// Sets `resource` of `pid` to at most `soft` / `hard`, never above the
/// hard limit it already has (raising that needs privileges).
fn lower(pid: i32, resource: Resource, soft: u64, hard: u64) -> io::Result<()> {
    let (mut current_soft, mut current_hard) = (0, 0);
    rlimit::prlimit(
        pid,
        resource,
        None,
        Some((&mut current_soft, &mut current_hard)),
    )?;
    let hard = hard.min(current_hard);
    rlimit::prlimit(pid, resource, Some((soft.min(hard), hard)), None)
}

/// `prlimit` on a process that no longer exists.
const ESRCH: i32 = 3;
