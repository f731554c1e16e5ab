//! Parsing the master's `show proc` table.
//!
//! ```text
//! #<PID>          <type>          <reloads>       <uptime>        <version>
//! 2599            master          6 [failed: 1]   0d00h00m36s     3.0.11-9e587df
//! # workers
//! 3550            worker          1               0d00h00m11s     3.0.11-9e587df
//! # old workers
//! 3460            worker          1               0d00h00m02s     3.0.11-9e587df
//! # programs
//! ```
//!
//! Columns are padded to 15 characters but a wide value (`11 [failed: 0]`)
//! eats the padding, so lines are split on whitespace, not by position.

/// One HAProxy process as `show proc` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    /// Operating-system process id.
    pub pid: u32,
    /// Reloads this process has lived through.
    pub reloads: u32,
    /// The uptime as HAProxy prints it, e.g. `0d00h00m36s`.
    pub uptime_text: String,
    /// The HAProxy version the process runs, e.g. `3.0.11-9e587df`.
    pub version: String,
}

/// The master CLI's `show proc` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcTable {
    /// The master; its `reloads` counts every reload, failed or not.
    pub master: Proc,
    /// `[failed: N]` on the master line: failed reloads since the last
    /// successful one (reset to 0 by a success); `None` when not shown.
    pub failed_reloads: Option<u32>,
    /// Workers serving the current configuration (one, normally).
    pub workers: Vec<Proc>,
    /// Workers of earlier configurations still draining connections.
    pub old_workers: Vec<Proc>,
}

#[derive(Clone, Copy)]
enum Section {
    Master,
    Workers,
    OldWorkers,
    Other,
}

impl ProcTable {
    /// Parses the table; the error says which line did not fit.
    pub(crate) fn parse(reply: &str) -> Result<Self, String> {
        let mut lines = reply.lines();
        let header = lines.next().unwrap_or_default();
        if !header.starts_with("#<PID>") {
            return Err("missing the #<PID> header".into());
        }
        let mut master = None;
        let mut workers = Vec::new();
        let mut old_workers = Vec::new();
        let mut section = Section::Master;
        for line in lines.filter(|line| !line.trim().is_empty()) {
            if let Some(name) = line.strip_prefix('#') {
                section = match name.trim() {
                    "workers" => Section::Workers,
                    "old workers" => Section::OldWorkers,
                    _ => Section::Other,
                };
                continue;
            }
            match section {
                Section::Master if master.is_none() => master = Some(parse_master(line)?),
                Section::Master => return Err(format!("a second master line: {line:?}")),
                Section::Workers => workers.push(parse_worker(line)?),
                Section::OldWorkers => old_workers.push(parse_worker(line)?),
                // Programs (`program` sections) have extra columns; not needed.
                Section::Other => {}
            }
        }
        let (master, failed_reloads) = master.ok_or("missing the master line")?;
        Ok(Self {
            master,
            failed_reloads,
            workers,
            old_workers,
        })
    }
}

fn parse_master(line: &str) -> Result<(Proc, Option<u32>), String> {
    let bad = || format!("unexpected master line {line:?}");
    let (before, failed, after) = match line.split_once("[failed:") {
        Some((before, rest)) => {
            let (count, after) = rest.split_once(']').ok_or_else(bad)?;
            let count = count.trim().parse().map_err(|_| bad())?;
            (before, Some(count), after)
        }
        None => (line, None, ""),
    };
    let words: Vec<&str> = before
        .split_whitespace()
        .chain(after.split_whitespace())
        .collect();
    match words.as_slice() {
        [pid, "master", reloads, uptime, version] => {
            Ok((proc(pid, reloads, uptime, version).ok_or_else(bad)?, failed))
        }
        _ => Err(bad()),
    }
}

fn parse_worker(line: &str) -> Result<Proc, String> {
    let bad = || format!("unexpected worker line {line:?}");
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        [pid, "worker", reloads, uptime, version] => {
            proc(pid, reloads, uptime, version).ok_or_else(bad)
        }
        _ => Err(bad()),
    }
}

fn proc(pid: &str, reloads: &str, uptime: &str, version: &str) -> Option<Proc> {
    Some(Proc {
        pid: pid.parse().ok()?,
        reloads: reloads.parse().ok()?,
        uptime_text: uptime.to_owned(),
        version: version.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from HAProxy 3.0.11 with a connection holding an old worker.
    const WITH_OLD_WORKER: &str = "#<PID>          <type>          <reloads>       <uptime>        <version>      \n2599            master          5 [failed: 0]   0d00h00m25s     3.0.11-9e587df \n# workers\n3550            worker          0               0d00h00m00s     3.0.11-9e587df \n# old workers\n3460            worker          1               0d00h00m02s     3.0.11-9e587df \n# programs\n\n";

    #[test]
    fn parses_master_workers_and_old_workers() {
        let table = ProcTable::parse(WITH_OLD_WORKER).unwrap();
        assert_eq!(
            table.master,
            Proc {
                pid: 2599,
                reloads: 5,
                uptime_text: "0d00h00m25s".into(),
                version: "3.0.11-9e587df".into(),
            }
        );
        assert_eq!(table.failed_reloads, Some(0));
        assert_eq!(table.workers.len(), 1);
        assert_eq!(table.workers[0].pid, 3550);
        assert_eq!(table.old_workers.len(), 1);
        assert_eq!(table.old_workers[0].pid, 3460);
        assert_eq!(table.old_workers[0].reloads, 1);
    }

    #[test]
    fn wide_reload_counts_and_missing_failed_counter() {
        let wide = "#<PID>          <type>          <reloads>       <uptime>        <version>      \n2599            master          11 [failed: 1]  0d00h05m27s     3.0.11-9e587df \n# workers\n12532           worker          0               0d00h02m06s     3.0.11-9e587df \n# programs\n\n";
        let table = ProcTable::parse(wide).unwrap();
        assert_eq!((table.master.reloads, table.failed_reloads), (11, Some(1)));
        assert!(table.old_workers.is_empty());

        let plain = "#<PID> <type> <reloads> <uptime> <version>\n1 master 0 0d00h00m01s 3.2.0\n# workers\n2 worker 0 0d00h00m01s 3.2.0\n";
        assert_eq!(ProcTable::parse(plain).unwrap().failed_reloads, None);
    }

    #[test]
    fn programs_are_skipped_and_garbage_is_rejected() {
        let programs = format!(
            "{}\n9 program dataplane 0 0d00h00m01s 3.0.11\n",
            WITH_OLD_WORKER.trim_end()
        );
        assert_eq!(ProcTable::parse(&programs).unwrap().workers.len(), 1);
        assert!(ProcTable::parse("Unknown command.\n").is_err());
        assert!(ProcTable::parse("#<PID> x\n# workers\n").is_err());
        assert!(ProcTable::parse("#<PID> x\n1 master zero 0d 3.0\n").is_err());
    }
}
