//! What is wrong with a certificate HAProxy can still serve: expired, not
//! yet valid, not for a host it is served for, or sent without the
//! certificate of its issuer.
//!
//! Each finding is a warning, never a refusal. Refusing would leave the
//! certificate's hosts on the default certificate, which fails every client,
//! where the Secret's own certificate still works for some (clients that
//! hold the missing intermediate, or that skip verification) and is the one
//! an operator expects to see while fixing it. And the checks that read the
//! clock must never turn away a certificate served a moment ago because the
//! clock moved: nothing on the apply path depends on wall time.

use std::collections::BTreeSet;

use hawser_model::ObjectRef;
use serde::Serialize;

use super::leaf::Leaf;

/// What the checks found wrong with a served certificate: a Warning
/// diagnostic on the Secret and each object naming it, and (in a cluster)
/// a Warning Event with [`CertificateWarning::reason`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CertificateWarning {
    /// A stable category, the Event's reason (`CertificateExpired`, …).
    pub reason: &'static str,
    /// Names the Secret, the hosts and what is wrong.
    pub message: String,
}

/// Where a certificate is served: the SNI names, and whether for its own
/// names too.
pub(crate) struct ServedFor<'a> {
    pub hosts: &'a BTreeSet<String>,
    pub own_names: bool,
}

/// Hosts named in one message; more are counted.
const HOSTS_NAMED: usize = 5;

/// The checks of the certificate of `secret`, served as `served`, at `now`
/// (Unix seconds: the render's clock). `issuer_is_trusted_root`: its
/// issuer is a root the Secret's `ca.crt` holds.
pub(crate) fn check(
    secret: &ObjectRef,
    leaf: &Leaf,
    issuer_is_trusted_root: bool,
    served: &ServedFor<'_>,
    now: i64,
) -> Vec<CertificateWarning> {
    let hosts: Vec<&String> = served.hosts.iter().collect();
    let mut where_served = listed(&hosts);
    if served.own_names {
        if !where_served.is_empty() {
            where_served.push_str(" and ");
        }
        where_served.push_str("its own names");
    }
    // Served for no name of its own: it is the default certificate.
    let instead = if where_served.is_empty() {
        where_served.push_str("the names no other certificate serves (the default certificate)");
        "a generated one"
    } else {
        "the default certificate"
    };
    let mut warnings = Vec::new();
    if now > leaf.not_after {
        warnings.push(CertificateWarning {
            reason: "CertificateExpired",
            message: format!(
                "TLS {secret}: its certificate expired at {}; served anyway for {where_served} (refusing it would serve {instead}, which fails every client): clients refuse it until it is renewed",
                utc(leaf.not_after)
            ),
        });
    }
    if now < leaf.not_before {
        warnings.push(CertificateWarning {
            reason: "CertificateNotYetValid",
            message: format!(
                "TLS {secret}: its certificate is not valid before {}; served anyway for {where_served} (refusing it would serve {instead}, which fails every client): clients refuse it until then",
                utc(leaf.not_before)
            ),
        });
    }
    let uncovered: Vec<&String> = hosts
        .iter()
        .copied()
        .filter(|host| !leaf.names.iter().any(|name| covers(name, host)))
        .collect();
    if !uncovered.is_empty() {
        let names: Vec<&String> = leaf.names.iter().collect();
        let names = if names.is_empty() {
            "none".to_string()
        } else {
            listed(&names)
        };
        warnings.push(CertificateWarning {
            reason: "CertificateHostMismatch",
            message: format!(
                "TLS {secret}: its certificate does not cover {} (its names: {names}); served anyway for {where_served} (refusing it would serve {instead}, which fails every client): clients refuse it for those hosts",
                listed(&uncovered)
            ),
        });
    }
    if !leaf.self_issued && !leaf.issuer_in_chain && !issuer_is_trusted_root {
        warnings.push(CertificateWarning {
            reason: "CertificateChainIncomplete",
            message: format!(
                "TLS {secret}: tls.crt lacks the certificate of its issuer ({}), the intermediate; served anyway for {where_served}: clients that do not hold that CA certificate themselves fail to verify it (put it after the certificate in tls.crt)",
                leaf.issuer_text
            ),
        });
    }
    warnings
}

/// Whether certificate name `name` covers `host` (RFC 6125 §6.4.3): equal
/// but for case, or `*.<parent>` for one label more than `<parent>`. A
/// wildcard host (`*.example.com`) is covered by the same wildcard only.
pub(crate) fn covers(name: &str, host: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if name == host {
        return true;
    }
    let Some(parent) = name.strip_prefix("*.") else {
        return false;
    };
    host.split_once('.')
        .is_some_and(|(label, rest)| !label.is_empty() && label != "*" && rest == parent)
}

/// `a, b, c and 4 more`.
fn listed(items: &[&String]) -> String {
    let mut out = items
        .iter()
        .take(HOSTS_NAMED)
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > HOSTS_NAMED {
        out.push_str(&format!(" and {} more", items.len() - HOSTS_NAMED));
    }
    out
}

/// Unix seconds as an RFC 3339 UTC time (`2026-12-01T23:38:28Z`).
pub(crate) fn utc(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let second_of_day = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3_600,
        second_of_day % 3_600 / 60,
        second_of_day % 60
    )
}
