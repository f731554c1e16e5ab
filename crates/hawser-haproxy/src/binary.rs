//! Finding the HAProxy binary and checking that it is recent enough.

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use crate::{HaproxyError, Version};

/// Environment variable naming the HAProxy binary; wins over `PATH`.
pub const HAPROXY_ENV: &str = "HAWSER_HAPROXY";

/// How long [`HaproxyBinary::check`] waits before killing `haproxy -c`.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(30);

/// An HAProxy binary known to run and to be at least [`Version::MINIMUM`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaproxyBinary {
    path: PathBuf,
    version: Version,
    check_timeout: Duration,
    check_niceness: i32,
}

impl HaproxyBinary {
    /// Finds HAProxy: the path in `HAWSER_HAPROXY` when it is set (and then
    /// only that one, so a wrong setting is reported rather than silently
    /// bypassed), otherwise the first executable `haproxy` on `PATH`.
    ///
    /// Blocks while `haproxy -v` runs (milliseconds): call it at startup.
    pub fn locate() -> Result<Self, HaproxyError> {
        if let Some(path) = std::env::var_os(HAPROXY_ENV).filter(|path| !path.is_empty()) {
            return Self::at(path);
        }
        let path_var = std::env::var_os("PATH");
        let found = find_on_path(path_var.as_deref()).ok_or(HaproxyError::NotFound)?;
        Self::at(found)
    }

    /// Uses the binary at `path`, after reading its version with `-v`.
    ///
    /// Blocks while `haproxy -v` runs (milliseconds): call it at startup.
    pub fn at(path: impl Into<PathBuf>) -> Result<Self, HaproxyError> {
        let path = path.into();
        let output = Command::new(&path)
            .arg("-v")
            .stdin(Stdio::null())
            .output()
            .map_err(|source| HaproxyError::Spawn {
                path: path.clone(),
                source,
            })?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let banner = stdout.lines().next().unwrap_or_default().trim().to_owned();
        let version = Version::from_banner(&banner)
            .filter(|_| output.status.success())
            .ok_or_else(|| HaproxyError::VersionUnreadable {
                path: path.clone(),
                banner,
            })?;
        if version < Version::MINIMUM {
            return Err(HaproxyError::TooOld {
                path,
                found: version,
                required: Version::MINIMUM,
            });
        }
        Ok(Self {
            path,
            version,
            check_timeout: DEFAULT_CHECK_TIMEOUT,
            check_niceness: 0,
        })
    }

    /// Replaces the [`DEFAULT_CHECK_TIMEOUT`] of [`HaproxyBinary::check`].
    pub fn with_check_timeout(mut self, timeout: Duration) -> Self {
        self.check_timeout = timeout;
        self
    }

    /// Runs checks `niceness` steps of `nice` below hawser's own CPU
    /// priority: for a check nobody waits for, which then leaves the CPUs
    /// to the traffic HAProxy serves (see [`Limits::niceness`]).
    ///
    /// [`Limits::niceness`]: crate::sandbox::Limits::niceness
    pub fn with_check_niceness(mut self, niceness: i32) -> Self {
        self.check_niceness = niceness;
        self
    }

    /// How many steps below hawser's own CPU priority checks run.
    pub fn check_niceness(&self) -> i32 {
        self.check_niceness
    }

    /// The binary's path, as given or as found on `PATH`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The version `haproxy -v` reported.
    pub fn version(&self) -> Version {
        self.version
    }

    /// How long a check may run before it is killed.
    pub fn check_timeout(&self) -> Duration {
        self.check_timeout
    }
}

/// The first executable file named `haproxy` in the directories of `path_var`.
fn find_on_path(path_var: Option<&OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path_var?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join("haproxy"))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

#[cfg(test)]
mod tests {
    use std::{ffi::OsString, fs};

    use super::*;

    #[cfg(unix)]
    fn write_mode(path: &Path, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        fs::write(path, "#!/bin/sh\n").unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn path_search_skips_directories_and_non_executables() {
        let root = tempfile::tempdir().unwrap();
        let (dir_named_haproxy, not_executable, executable) = (
            root.path().join("a"),
            root.path().join("b"),
            root.path().join("c"),
        );
        fs::create_dir_all(dir_named_haproxy.join("haproxy")).unwrap();
        fs::create_dir_all(&not_executable).unwrap();
        write_mode(&not_executable.join("haproxy"), 0o644);
        fs::create_dir_all(&executable).unwrap();
        write_mode(&executable.join("haproxy"), 0o755);

        let path_var =
            std::env::join_paths([&dir_named_haproxy, &not_executable, &executable]).unwrap();
        assert_eq!(
            find_on_path(Some(&path_var)),
            Some(executable.join("haproxy"))
        );
        let without = std::env::join_paths([&dir_named_haproxy, &not_executable]).unwrap();
        assert_eq!(find_on_path(Some(&without)), None);
        assert_eq!(find_on_path(Some(&OsString::new())), None);
        assert_eq!(find_on_path(None), None);
    }
}
