//! Checks `haproxy -c` does not make, run on a staged version before HAProxy
//! may load it.
//!
//! `haproxy -c` accepts a `chroot` to a missing directory or a `user` that does
//! not exist, and on HAProxy 3.0 the new worker then dies after the reload
//! reported success, taking every process down with it. These directives are
//! read from the `global` section by keyword (the only place they can be).

use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("haproxy.cfg line {line}: chroot directory {dir:?} does not exist")]
    MissingChroot { line: usize, dir: String },
    #[error("haproxy.cfg line {line}: {directive} {name:?} does not exist on this machine")]
    UnknownAccount {
        line: usize,
        directive: &'static str,
        name: String,
    },
}

impl CheckError {
    /// The line of haproxy.cfg at fault.
    pub fn line(&self) -> usize {
        match self {
            CheckError::MissingChroot { line, .. } | CheckError::UnknownAccount { line, .. } => {
                *line
            }
        }
    }

    pub fn metric_label(&self) -> &'static str {
        match self {
            CheckError::MissingChroot { .. } => "missing_chroot",
            CheckError::UnknownAccount { .. } => "unknown_account",
        }
    }
}

/// Where account names are looked up; a parameter so tests need no real accounts.
#[derive(Debug, Clone)]
pub struct AccountFiles<'a> {
    pub passwd: &'a Path,
    pub group: &'a Path,
}

impl Default for AccountFiles<'static> {
    fn default() -> Self {
        AccountFiles {
            passwd: Path::new("/etc/passwd"),
            group: Path::new("/etc/group"),
        }
    }
}

/// Checks `chroot`, `user`/`uid` and `group`/`gid` in the `global` section.
pub fn check_global(config: &str, accounts: &AccountFiles<'_>) -> Result<(), CheckError> {
    let mut in_global = false;
    for (index, raw) in config.lines().enumerate() {
        let line = index + 1;
        let text = raw.split('#').next().unwrap_or_default().trim();
        let mut words = text.split_whitespace();
        let Some(keyword) = words.next() else {
            continue;
        };
        if !raw.starts_with(char::is_whitespace) {
            in_global = keyword == "global";
            continue;
        }
        if !in_global {
            continue;
        }
        let value = words.next().unwrap_or_default().to_string();
        match keyword {
            "chroot" if !Path::new(&value).is_dir() => {
                return Err(CheckError::MissingChroot { line, dir: value });
            }
            "user" | "group" => {
                let file = if keyword == "user" {
                    accounts.passwd
                } else {
                    accounts.group
                };
                if !account_exists(file, &value) {
                    let directive = if keyword == "user" { "user" } else { "group" };
                    return Err(CheckError::UnknownAccount {
                        line,
                        directive,
                        name: value,
                    });
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn account_exists(file: &Path, name: &str) -> bool {
    std::fs::read_to_string(file)
        .map(|text| text.lines().any(|l| l.split(':').next() == Some(name)))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accounts(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let passwd = dir.join("passwd");
        let group = dir.join("group");
        std::fs::write(
            &passwd,
            "root:x:0:0::/root:/bin/sh\nhaproxy:x:99:99::/:/bin/false\n",
        )
        .expect("passwd");
        std::fs::write(&group, "root:x:0:\nhaproxy:x:99:\n").expect("group");
        (passwd, group)
    }

    #[test]
    fn global_directives_are_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (passwd, group) = accounts(dir.path());
        let files = AccountFiles {
            passwd: &passwd,
            group: &group,
        };
        let ok = format!(
            "global\n  chroot {}\n  user haproxy\n  group haproxy\ndefaults\n  mode http\n",
            dir.path().display()
        );
        assert_eq!(check_global(&ok, &files), Ok(()));

        let missing = "global\n  log stdout local0\n  chroot /nonexistent-dir # jail\n";
        assert_eq!(
            check_global(missing, &files),
            Err(CheckError::MissingChroot {
                line: 3,
                dir: "/nonexistent-dir".to_string()
            })
        );
        let user = "global\n  user nobody-here\n";
        assert!(matches!(
            check_global(user, &files),
            Err(CheckError::UnknownAccount { line: 2, .. })
        ));
        let group = "global\n  group nobody-here\n";
        assert!(check_global(group, &files).is_err());
    }

    #[test]
    fn other_sections_and_comments_are_ignored() {
        let files = AccountFiles::default();
        let cfg = "# chroot /nope\nglobal\n  # chroot /nope\ndefaults\n  chroot /nope\nbackend b\n  user nobody-here\n";
        assert_eq!(check_global(cfg, &files), Ok(()));
    }
}
