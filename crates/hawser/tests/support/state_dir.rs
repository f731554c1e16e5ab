//! What a `hawser run` state directory holds, read from outside: the
//! versioned tree's pointers and directories, and the HAProxy processes
//! running on it (found through `/proc`, not through hawser).
//!
//! ```text
//!  <state>/tree/  v<20 digits>/ ...   current -> v..   lkg -> v..   staging.<gen>.<pid>/
//!  /proc/<pid>/cmdline  haproxy ... -C <state>/tree/current ...   (masters and their workers)
//! ```

use std::fs;
use std::path::{Path, PathBuf};

/// The versioned tree under `<state>/tree`, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeSnapshot {
    /// Where `current` points (the link's text), if it is a symlink.
    pub current: Option<String>,
    /// Where `lkg` points, if it is a symlink.
    pub lkg: Option<String>,
    /// Version directories (`v` and 20 digits), sorted.
    pub versions: Vec<String>,
    /// `staging.*` entries: versions being written when the process died.
    pub staging: Vec<String>,
}

impl TreeSnapshot {
    /// Reads `<state_dir>/tree`.
    pub fn read(state_dir: &Path) -> TreeSnapshot {
        let tree = state_dir.join("tree");
        let pointer = |name: &str| {
            fs::read_link(tree.join(name))
                .ok()
                .map(|target| target.to_string_lossy().into_owned())
        };
        let mut versions = Vec::new();
        let mut staging = Vec::new();
        let entries =
            fs::read_dir(&tree).unwrap_or_else(|e| panic!("cannot read {}: {e}", tree.display()));
        for entry in entries {
            let entry = entry.expect("tree entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("staging.") {
                staging.push(name);
            } else if is_version_name(&name) && entry.path().is_dir() {
                versions.push(name);
            }
        }
        versions.sort();
        staging.sort();
        TreeSnapshot {
            current: pointer("current"),
            lkg: pointer("lkg"),
            versions,
            staging,
        }
    }

    /// The generation a pointer names (`v00000000000000000012` → 12).
    pub fn generation(pointer: Option<&String>) -> Option<u64> {
        pointer
            .filter(|name| is_version_name(name))
            .and_then(|name| name[1..].parse().ok())
    }
}

fn is_version_name(name: &str) -> bool {
    name.len() == 21 && name.starts_with('v') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

/// The pids of the HAProxy masters running on `state_dir`'s tree: processes
/// whose command line has `-C <state>/tree/current` and whose parent is not
/// one of them (workers are the masters' children).
pub fn haproxy_masters(state_dir: &Path) -> Vec<u32> {
    let config_dir = canonical(state_dir).join("tree/current");
    let mut processes: Vec<(u32, u32)> = Vec::new();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let argv: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let ours = argv
            .windows(2)
            .any(|pair| pair[0] == b"-C" && pair[1] == config_dir.as_os_str().as_encoded_bytes());
        if !ours {
            continue;
        }
        if let Some((state, ppid)) = stat(pid)
            && state != 'Z'
            && state != 'X'
        {
            processes.push((pid, ppid));
        }
    }
    let mut masters: Vec<u32> = processes
        .iter()
        .filter(|(_, ppid)| !processes.iter().any(|(pid, _)| pid == ppid))
        .map(|(pid, _)| *pid)
        .collect();
    masters.sort_unstable();
    masters
}

/// State and parent pid from `/proc/<pid>/stat` (the command name, in
/// parentheses, may hold spaces: fields are counted after its `)`).
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}
