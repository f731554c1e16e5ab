//! Reading HAProxy's traffic counters: `show stat` (backends and servers,
//! CSV) and `show table` (a stick table's entries).
//!
//! ```text
//! # pxname,svname,qcur,...,req_tot,...
//! be_app_web_80,ep_10_0_0_1_80,0,...
//! be_app_web_80,BACKEND,0,...,12,...
//!
//! # table: hawser_routes, type: string, size:102400, used:1
//! 0x55b4afce49d0: key=Ingress/app/web use=0 exp=86399988 shard=0 http_req_cnt=3 gpc0=0 gpc1=1
//! ```
//!
//! Columns and counters are found by name, so those HAProxy adds in later
//! versions shift nothing.

use std::collections::{BTreeMap, HashMap};

use super::RuntimeApi;
use crate::{
    SocketError,
    cli::{self, Command, args},
};

/// `show stat`'s rows, with its columns by name.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    columns: HashMap<String, usize>,
    rows: Vec<Vec<String>>,
}

/// One row of `show stat`: a backend (`name() == "BACKEND"`) or a server.
#[derive(Debug, Clone, Copy)]
pub struct StatRow<'a> {
    stats: &'a Stats,
    cells: &'a [String],
}

impl Stats {
    /// Parses `show stat`'s CSV (header line first, starting `# `).
    pub fn parse(csv: &str) -> Option<Stats> {
        let mut lines = csv.lines();
        let header = lines.next()?.strip_prefix("# ")?;
        let columns: HashMap<String, usize> = header
            .split(',')
            .enumerate()
            .filter(|(_, name)| !name.is_empty())
            .map(|(at, name)| (name.to_string(), at))
            .collect();
        if !columns.contains_key("pxname") || !columns.contains_key("svname") {
            return None;
        }
        let rows = lines
            .filter(|line| !line.is_empty())
            .map(|line| line.split(',').map(str::to_string).collect())
            .collect();
        Some(Stats { columns, rows })
    }

    pub fn rows(&self) -> impl Iterator<Item = StatRow<'_>> {
        self.rows.iter().map(|cells| StatRow { stats: self, cells })
    }
}

impl<'a> StatRow<'a> {
    /// `pxname`: the backend.
    pub fn proxy(&self) -> &'a str {
        self.text("pxname")
    }

    /// `svname`: the server, or `BACKEND` for the backend's own row.
    pub fn name(&self) -> &'a str {
        self.text("svname")
    }

    pub fn is_backend(&self) -> bool {
        self.name() == "BACKEND"
    }

    /// The cell of `column` as printed; empty when HAProxy has no such
    /// column or leaves it empty.
    pub fn text(&self, column: &str) -> &'a str {
        self.stats
            .columns
            .get(column)
            .and_then(|&at| self.cells.get(at))
            .map_or("", String::as_str)
    }

    /// The cell of `column` as a number; 0 when empty or not a number.
    pub fn number(&self, column: &str) -> u64 {
        self.text(column).parse().unwrap_or(0)
    }
}

/// One entry of a stick table: its key and its stored counters by name
/// (`http_req_cnt`, `gpc0`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableEntry {
    pub key: String,
    pub counters: BTreeMap<String, u64>,
}

impl TableEntry {
    /// The counter `name`; 0 when the table does not store it.
    pub fn counter(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }
}

/// Parses `show table <name>`'s entries (the `# table:` line first).
pub fn parse_table(reply: &str) -> Option<Vec<TableEntry>> {
    let mut lines = reply.lines();
    lines.next()?.strip_prefix("# table:")?;
    let mut entries = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (_, fields) = line.split_once(": ")?;
        let mut key = None;
        let mut counters = BTreeMap::new();
        for field in fields.split(' ') {
            let Some((name, value)) = field.split_once('=') else {
                continue;
            };
            if name == "key" {
                key = Some(value.to_string());
            } else if let Ok(value) = value.parse() {
                counters.insert(name.to_string(), value);
            }
        }
        entries.push(TableEntry {
            key: key?,
            counters,
        });
    }
    Some(entries)
}

impl RuntimeApi {
    /// `show stat -1 6 -1`: every backend's row and every server's.
    pub async fn show_stat(&self) -> Result<Stats, SocketError> {
        let command = Command::new("show stat -1 6 -1");
        let reply = self.send(&command).await?;
        Stats::parse(cli::text(&reply))
            .ok_or_else(|| cli::unparsable(&command, "no `# pxname,svname,...` header", &reply))
    }

    /// `show table <table>`: its entries.
    pub async fn show_table(&self, table: &str) -> Result<Vec<TableEntry>, SocketError> {
        let command = Command::new(format!("show table {}", args::word("table name", table)?));
        let reply = self.send(&command).await?;
        parse_table(cli::text(&reply)).ok_or_else(|| cli::rejected(&command, &reply))
    }
}

#[cfg(test)]
mod tests {
    use super::{Stats, parse_table};

    #[test]
    fn stat_rows_are_read_by_column_name() {
        let csv = "# pxname,svname,qcur,req_tot,status,\n\
                   be_a,s1,0,,UP,\n\
                   be_a,BACKEND,2,17,UP,\n";
        let stats = Stats::parse(csv).expect("parses");
        let rows: Vec<_> = stats.rows().collect();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].proxy(), rows[0].name()), ("be_a", "s1"));
        assert!(!rows[0].is_backend() && rows[1].is_backend());
        assert_eq!(rows[1].number("req_tot"), 17);
        assert_eq!(rows[0].number("req_tot"), 0, "an empty cell reads as 0");
        assert_eq!(rows[1].text("status"), "UP");
        assert_eq!(rows[1].text("no_such_column"), "");
        assert!(Stats::parse("Unknown command\n").is_none());
    }

    #[test]
    fn table_entries_keep_their_key_and_counters() {
        let reply = "# table: hawser_routes, type: string, size:102400, used:2\n\
                     0x55b4afce49d0: key=Ingress/app/web use=0 exp=86399988 shard=0 http_req_cnt=3 gpc0=0 gpc1=1 gpc4=2\n\
                     0x55b4afce4a00: key=Ingress/app/api use=1 exp=1 shard=0 http_req_cnt=0\n";
        let entries = parse_table(reply).expect("parses");
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].key, "Ingress/app/web");
        assert_eq!(entries[0].counter("http_req_cnt"), 3);
        assert_eq!(entries[0].counter("gpc4"), 2);
        assert_eq!(entries[1].counter("gpc4"), 0);
        assert!(parse_table("No such table\n").is_none());
        let empty = "# table: hawser_routes, type: string, size:102400, used:0\n";
        assert_eq!(parse_table(empty), Some(Vec::new()));
    }
}
