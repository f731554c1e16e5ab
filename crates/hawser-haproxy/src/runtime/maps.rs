//! Map commands, and the safe whole-map replacement:
//!
//! ```text
//!  prepare map <m>          → New version created: <v>
//!  add map @<v> <m> <<      → (empty reply)   one or more chunks, each ending with an empty line
//!  show map @<v> <m>        → count must equal the entries sent, else stop here
//!  commit map @<v> <m>      → (empty reply)   atomic swap; older versions are freed
//! ```
//!
//! Committing a version that did not receive its entries publishes an
//! empty map, and a payload without its terminating empty line is dropped
//! without an error, hence the count check before every commit.

use super::RuntimeApi;
use crate::{
    SocketError,
    cli::{self, Command, args},
};

/// One line of `show map`: a map file loaded by the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapInfo {
    /// The numeric id, usable as `#<id>` instead of the file name.
    pub id: u32,
    /// The file the map was loaded from, as the configuration names it
    /// (relative to `-C`), e.g. `maps/hosts.map`.
    pub file: String,
    /// HAProxy's description (which configuration line uses the map).
    pub description: String,
    /// The version lookups use.
    pub curr_ver: u32,
    /// The latest version `prepare map` allocated.
    pub next_ver: u32,
    /// Entries over all versions, prepared ones included.
    pub entry_cnt: u64,
}

impl RuntimeApi {
    /// `show map`: every map with its versions and entry count.
    pub async fn show_maps(&self) -> Result<Vec<MapInfo>, SocketError> {
        let command = Command::new("show map");
        let reply = self.send(&command).await?;
        let text = cli::text(&reply);
        let mut lines = text.lines();
        if lines
            .next()
            .is_none_or(|header| !header.starts_with("# id"))
        {
            return Err(cli::rejected(&command, &reply));
        }
        lines
            .map(|line| {
                parse_map_info(line)
                    .ok_or_else(|| cli::unparsable(&command, format!("bad line {line:?}"), &reply))
            })
            .collect()
    }

    /// `show map <map>`: the entries of the current version, in order.
    pub async fn show_map(&self, map: &str) -> Result<Vec<(String, String)>, SocketError> {
        let command = Command::new(format!("show map {}", args::word("map name", map)?));
        self.list_entries(&command).await
    }

    /// `show map @<version> <map>`: the entries of a version, in order.
    /// A version that does not exist lists as empty.
    pub async fn show_map_version(
        &self,
        version: u32,
        map: &str,
    ) -> Result<Vec<(String, String)>, SocketError> {
        let command = Command::new(format!(
            "show map @{version} {}",
            args::word("map name", map)?
        ));
        self.list_entries(&command).await
    }

    /// `prepare map <map>`: allocates an empty version and returns its number.
    pub async fn prepare_map(&self, map: &str) -> Result<u32, SocketError> {
        let command = Command::new(format!("prepare map {}", args::word("map name", map)?));
        let reply = self.send(&command).await?;
        cli::text(&reply)
            .strip_prefix("New version created: ")
            .and_then(|version| version.parse().ok())
            .ok_or_else(|| cli::rejected(&command, &reply))
    }

    /// `add map @<version> <map> <<` with one `key value` line per entry,
    /// split into as many commands as the command size limit needs.
    ///
    /// Keys may not contain whitespace; values may, but not line breaks.
    /// A failure can leave part of the entries in the version: never commit
    /// it then.
    pub async fn add_map_payload<K, V>(
        &self,
        version: u32,
        map: &str,
        entries: &[(K, V)],
    ) -> Result<(), SocketError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let line = format!("add map @{version} {}", args::word("map name", map)?);
        let lines = entries
            .iter()
            .map(|(key, value)| args::map_payload_line(key.as_ref(), value.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        for chunk in chunks(&line, &lines, self.max_command_bytes)? {
            let command = Command::with_payload(&line, chunk.iter().map(String::as_str));
            self.expect_empty(&command).await?;
        }
        Ok(())
    }

    /// `commit map @<version> <map>`: makes the version current, atomically.
    pub async fn commit_map(&self, version: u32, map: &str) -> Result<(), SocketError> {
        let command = Command::new(format!(
            "commit map @{version} {}",
            args::word("map name", map)?
        ));
        self.expect_empty(&command).await
    }

    /// `set map <map> <key> <value>`: changes the value of every entry with `key`.
    pub async fn set_map(&self, map: &str, key: &str, value: &str) -> Result<(), SocketError> {
        let command = Command::new(map_line("set", map, key, Some(value))?);
        self.expect_empty(&command).await
    }

    /// `add map <map> <key> <value>`: adds an entry to the current version
    /// (duplicates are not checked).
    pub async fn add_map(&self, map: &str, key: &str, value: &str) -> Result<(), SocketError> {
        let command = Command::new(map_line("add", map, key, Some(value))?);
        self.expect_empty(&command).await
    }

    /// `del map <map> <key>`: removes every entry with `key`.
    pub async fn del_map(&self, map: &str, key: &str) -> Result<(), SocketError> {
        let command = Command::new(map_line("del", map, key, None)?);
        self.expect_empty(&command).await
    }

    /// Replaces every entry of `map` atomically: prepare, add, check that
    /// the new version holds exactly `entries.len()` entries, commit.
    /// Returns the committed version.
    ///
    /// Nothing is committed when any step fails; the abandoned version is
    /// freed by the next commit.
    pub async fn replace_map<K, V>(&self, map: &str, entries: &[(K, V)]) -> Result<u32, SocketError>
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        // Check every entry before allocating a version.
        for (key, value) in entries {
            args::map_payload_line(key.as_ref(), value.as_ref())?;
        }
        let version = self.prepare_map(map).await?;
        self.add_map_payload(version, map, entries).await?;
        let found = self.show_map_version(version, map).await?.len();
        if found != entries.len() {
            return Err(SocketError::MapCountMismatch {
                map: map.to_owned(),
                version,
                expected: entries.len(),
                found,
            });
        }
        // The new version holds every entry; lookups still use the old one.
        hawser_failpoint::failpoint!("runtime.map_prepared_before_commit");
        self.commit_map(version, map).await?;
        Ok(version)
    }

    /// Runs a `show map` for entries: `0x<ref> <key> <value>` lines.
    async fn list_entries(&self, command: &Command) -> Result<Vec<(String, String)>, SocketError> {
        let reply = self.send(command).await?;
        cli::text(&reply)
            .lines()
            .map(|line| parse_entry(line).ok_or_else(|| cli::rejected(command, &reply)))
            .collect()
    }
}

/// `0x55bd2c106790 y.example.test be y` → (`y.example.test`, `be y`).
fn parse_entry(line: &str) -> Option<(String, String)> {
    let (reference, rest) = line.split_once(' ')?;
    if !reference.starts_with("0x") {
        return None;
    }
    let (key, value) = rest.split_once(' ').unwrap_or((rest, ""));
    Some((key.to_owned(), value.to_owned()))
}

/// `0 (maps/hosts.map) pattern loaded ... curr_ver=0 next_ver=1 entry_cnt=4`.
fn parse_map_info(line: &str) -> Option<MapInfo> {
    let (id, rest) = line.split_once(' ')?;
    let (file, rest) = rest.strip_prefix('(')?.split_once(')')?;
    let mut words: Vec<&str> = rest.split_whitespace().collect();
    let mut counter = |name: &str| -> Option<u64> {
        let position = words.iter().rposition(|word| word.starts_with(name))?;
        let value = words.remove(position).strip_prefix(name)?.parse().ok()?;
        Some(value)
    };
    let entry_cnt = counter("entry_cnt=")?;
    let next_ver = u32::try_from(counter("next_ver=")?).ok()?;
    let curr_ver = u32::try_from(counter("curr_ver=")?).ok()?;
    Some(MapInfo {
        id: id.parse().ok()?,
        file: file.to_owned(),
        description: words.join(" "),
        curr_ver,
        next_ver,
        entry_cnt,
    })
}

/// Splits payload `lines` into groups whose `<line> <<` command stays
/// within `limit` bytes.
fn chunks<'a>(
    line: &str,
    lines: &'a [String],
    limit: usize,
) -> Result<Vec<&'a [String]>, SocketError> {
    // `<line> <<\n` + entries + the terminating `\n`.
    let overhead = line.len() + " <<\n".len() + 1;
    let mut groups = Vec::new();
    let (mut start, mut size) = (0, overhead);
    for (index, entry) in lines.iter().enumerate() {
        let entry_size = entry.len() + 1;
        if overhead + entry_size > limit {
            return Err(SocketError::PayloadTooLarge {
                command: format!("{line} <<"),
                size: overhead + entry_size,
                limit,
            });
        }
        if size + entry_size > limit {
            groups.push(&lines[start..index]);
            (start, size) = (index, overhead);
        }
        size += entry_size;
    }
    if start < lines.len() {
        groups.push(&lines[start..]);
    }
    Ok(groups)
}

/// `<verb> map <map> <key> [<value>]`, each argument checked and escaped:
/// one command that says nothing when it succeeds.
pub(super) fn map_line(
    verb: &str,
    map: &str,
    key: &str,
    value: Option<&str>,
) -> Result<String, SocketError> {
    let mut line = format!(
        "{verb} map {} {}",
        args::word("map name", map)?,
        args::map_key(key)?
    );
    if let Some(value) = value {
        line.push(' ');
        line.push_str(&args::map_value(value)?);
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_show_map_lines() {
        let line = "0 (maps/hosts.map) pattern loaded from file 'maps/hosts.map' used by map at file 'haproxy.cfg' line 14. curr_ver=1 next_ver=3 entry_cnt=6516";
        assert_eq!(
            parse_map_info(line),
            Some(MapInfo {
                id: 0,
                file: "maps/hosts.map".into(),
                description: "pattern loaded from file 'maps/hosts.map' used by map at file 'haproxy.cfg' line 14.".into(),
                curr_ver: 1,
                next_ver: 3,
                entry_cnt: 6516,
            })
        );
        let anonymous =
            "1 () acl 'var' file 'httpclient' line 0. curr_ver=0 next_ver=0 entry_cnt=1";
        assert_eq!(parse_map_info(anonymous).unwrap().file, "");
        assert_eq!(parse_map_info("Unknown command"), None);
    }

    #[test]
    fn parses_entries_with_spaces_in_values() {
        assert_eq!(
            parse_entry("0x55bd2c106790 y.example.test be y with spaces;semi"),
            Some(("y.example.test".into(), "be y with spaces;semi".into()))
        );
        assert_eq!(
            parse_entry("Unknown map identifier. Please use #<id> or <file>."),
            None
        );
    }

    #[test]
    fn payloads_are_split_under_the_limit() {
        let lines: Vec<String> = (0..10).map(|i| format!("k{i} v")).collect();
        let line = "add map @1 m";
        // 12 + 4 + 1 = 17 bytes of overhead, 5 bytes per entry.
        let groups = chunks(line, &lines, 17 + 5 * 4).unwrap();
        assert_eq!(
            groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
            [4, 4, 2]
        );
        for group in &groups {
            let command = Command::with_payload(line, group.iter().map(String::as_str));
            assert!(command.wire(cli::Peer::Worker).len() <= 17 + 5 * 4);
        }
        assert!(chunks(line, &lines, 20).is_err());
        assert!(chunks(line, &[], 100).unwrap().is_empty());
    }
}
