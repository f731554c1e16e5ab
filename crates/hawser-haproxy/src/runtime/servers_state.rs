//! Parsing `show servers state` (format version 1).
//!
//! ```text
//! 1
//! # be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight ...
//! 3 be_app 1 s1 127.0.0.1 2 0 1 1 8 1 0 2 0 0 0 0 - 18091 - 0 0 - - 0
//! ```
//!
//! Columns are found by their header names, so columns HAProxy adds in
//! later versions do not shift anything.

use std::str::FromStr;

use crate::{
    SocketError,
    cli::{self, Command},
};

/// One server line of `show servers state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerState {
    /// `be_name`.
    pub backend: String,
    /// `srv_name`.
    pub name: String,
    /// `srv_addr`, as printed (`127.0.0.1`, `::1`).
    pub addr: String,
    /// `srv_port`.
    pub port: u16,
    /// `srv_op_state`: 0 stopped, 1 starting, 2 running, 3 stopping.
    pub op_state: u8,
    /// `srv_admin_state`, a bit set: 0x01 forced maintenance, 0x02
    /// inherited maintenance, 0x04 maintenance from the configuration, 0x08
    /// forced drain, 0x10 inherited drain, 0x20 resolution failure.
    pub admin_state: u8,
    /// `srv_uweight`, the current user weight.
    pub weight: u16,
}

impl ServerState {
    /// Any maintenance flag is set (forced, inherited, configured,
    /// resolution): the server takes no traffic.
    pub fn in_maintenance(&self) -> bool {
        self.admin_state & (0x01 | 0x02 | 0x04 | 0x20) != 0
    }

    /// A drain flag is set: no new traffic from load balancing.
    pub fn draining(&self) -> bool {
        self.admin_state & (0x08 | 0x10) != 0
    }
}

/// The reply to `command` as server states: [`SocketError::Rejected`]
/// when HAProxy answered with an error, [`SocketError::Unparsable`] when the
/// table is malformed.
pub(super) fn parse_reply(command: &Command, reply: &str) -> Result<Vec<ServerState>, SocketError> {
    parse(reply).map_err(|reason| {
        if reply.starts_with("1\n") {
            cli::unparsable(command, reason, reply)
        } else {
            cli::rejected(command, reply)
        }
    })
}

fn parse(reply: &str) -> Result<Vec<ServerState>, String> {
    let mut lines = reply.lines().filter(|line| !line.trim().is_empty());
    if lines.next() != Some("1") {
        return Err("not format version 1".into());
    }
    let header = lines
        .next()
        .and_then(|line| line.strip_prefix('#'))
        .ok_or("missing the column header")?;
    let columns: Vec<&str> = header.split_whitespace().collect();
    let index = |name: &str| {
        columns
            .iter()
            .position(|column| *column == name)
            .ok_or_else(|| format!("missing column {name}"))
    };
    let at = Columns {
        backend: index("be_name")?,
        name: index("srv_name")?,
        addr: index("srv_addr")?,
        port: index("srv_port")?,
        op_state: index("srv_op_state")?,
        admin_state: index("srv_admin_state")?,
        weight: index("srv_uweight")?,
    };
    lines.map(|line| at.read(line)).collect()
}

struct Columns {
    backend: usize,
    name: usize,
    addr: usize,
    port: usize,
    op_state: usize,
    admin_state: usize,
    weight: usize,
}

impl Columns {
    fn read(&self, line: &str) -> Result<ServerState, String> {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let field = |index: usize| field(&fields, index, line);
        Ok(ServerState {
            backend: field(self.backend)?.to_owned(),
            name: field(self.name)?.to_owned(),
            addr: field(self.addr)?.to_owned(),
            port: number(&fields, self.port, line)?,
            op_state: number(&fields, self.op_state, line)?,
            admin_state: number(&fields, self.admin_state, line)?,
            weight: number(&fields, self.weight, line)?,
        })
    }
}

fn field<'a>(fields: &[&'a str], index: usize, line: &str) -> Result<&'a str, String> {
    fields
        .get(index)
        .copied()
        .ok_or_else(|| format!("short line {line:?}"))
}

fn number<T: FromStr>(fields: &[&str], index: usize, line: &str) -> Result<T, String> {
    let text = field(fields, index, line)?;
    text.parse()
        .map_err(|_| format!("not a number: {text:?} in {line:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Captured from HAProxy 3.0.11: a dynamic server in MAINT (s3, IPv6) and one draining (s2).
    const REPLY: &str = "1\n# be_id be_name srv_id srv_name srv_addr srv_op_state srv_admin_state srv_uweight srv_iweight srv_time_since_last_change srv_check_status srv_check_result srv_check_health srv_check_state srv_agent_state bk_f_forced_id srv_f_forced_id srv_fqdn srv_port srvrecord srv_use_ssl srv_check_port srv_check_addr srv_agent_addr srv_agent_port\n3 be_app 1 s1 127.0.0.1 2 0 1 1 13 1 0 2 0 0 0 0 - 18091 - 0 0 - - 0\n3 be_app 2 s2 127.0.0.1 2 8 1 1 33 1 0 2 0 0 0 0 - 18092 - 0 0 - - 0\n3 be_app 3 s3 ::1 0 1 7 1 1 1 0 0 0 0 0 0 - 18095 - 0 0 - - 0\n\n";

    #[test]
    fn reads_columns_by_header_name() {
        let states = parse(REPLY).unwrap();
        assert_eq!(states.len(), 3);
        assert_eq!(
            states[2],
            ServerState {
                backend: "be_app".into(),
                name: "s3".into(),
                addr: "::1".into(),
                port: 18095,
                op_state: 0,
                admin_state: 1,
                weight: 7,
            }
        );
        assert!(states[2].in_maintenance() && !states[2].draining());
        assert!(states[1].draining() && !states[1].in_maintenance());
    }

    #[test]
    fn reordered_columns_still_parse() {
        let reply = "1\n# srv_port srv_name be_name srv_uweight srv_admin_state srv_op_state srv_addr extra\n80 web be 5 0 2 10.0.0.1 x\n";
        let states = parse(reply).unwrap();
        assert_eq!(
            (states[0].name.as_str(), states[0].port, states[0].weight),
            ("web", 80, 5)
        );
    }

    #[test]
    fn errors_and_malformed_tables_are_rejected() {
        assert!(parse("Can't find backend.\n\n").is_err());
        assert!(parse("1\n# be_name srv_name\n").is_err());
        let short = REPLY.replace(" 18091 - 0 0 - - 0", "");
        assert!(parse(&short).is_err());
        // A backend without servers is an empty list, not an error.
        let header_only: String = REPLY.lines().take(2).map(|l| format!("{l}\n")).collect();
        assert_eq!(parse(&header_only).unwrap(), []);
    }
}
