//! haproxytech's annotations (`haproxy.org/`, and `haproxy.com/` which it
//! reads alike), onto hawser's. Formats and defaults are haproxytech's own,
//! from its `documentation/annotations.md` (section named beside each); it
//! reads some on an Ingress, some on a Service, most on both (its
//! "Available on" flags).

use super::nginx::same_namespace;
use super::{DialectError, Target, Their, Translation, Value};

pub(super) const PREFIXES: &[&str] = &["haproxy.org/", "haproxy.com/"];

/// "Https" › `ssl-redirect-code`.
const REDIRECT_CODE: &str = "302";
/// "Authentication" › `auth-realm`.
const REALM: &str = "Protected Content";
/// "Rate Limit" › `rate-limit-status-code`.
const LIMIT_STATUS: &str = "403";

pub(super) fn translate(
    read: &mut Their<'_>,
    target: Target,
    namespace: &str,
    t: &mut Translation,
) -> Result<(), DialectError> {
    backend(read, namespace, t)?;
    if target == Target::Service {
        // "Cookie Persistence": read on Services (and ignored on Ingresses).
        if let Some(v) = read.take("cookie-persistence") {
            t.set("affinity", "cookie", v.annotation)?;
            t.set("session-cookie-name", v.text.trim(), v.annotation)?;
        }
        return Ok(());
    }
    https(read, t)?;
    // Not in haproxytech's documentation: the names another HAProxy
    // controller uses, read as they mean there.
    for (theirs, ours) in [
        ("hsts", "hsts"),
        ("hsts-max-age", "hsts-max-age"),
        ("hsts-preload", "hsts-preload"),
        ("hsts-subdomains", "hsts-include-subdomains"),
    ] {
        if let Some(v) = read.take(theirs) {
            t.set(ours, v.text, v.annotation)?;
        }
    }
    headers(read, t)?;
    // "Set Host", "Path Rewrite", "Request Redirect".
    for (theirs, ours) in [
        ("set-host", "upstream-vhost"),
        ("path-rewrite", "path-rewrite"),
        ("request-redirect", "request-redirect"),
        ("request-redirect-code", "request-redirect-code"),
    ] {
        if let Some(v) = read.take(theirs) {
            t.set(ours, v.text, v.annotation)?;
        }
    }
    access_lists(read, t)?;
    authentication(read, namespace, t)?;
    rate_limit(read, t)?;
    cors(read, t)?;
    Ok(())
}

/// "Https": `ssl-redirect` (on by default for an Ingress with TLS, as
/// hawser's), its code (302 unless said) and port, `ssl-passthrough`.
fn https(read: &mut Their<'_>, t: &mut Translation) -> Result<(), DialectError> {
    let code = read.take("ssl-redirect-code");
    if let Some(v) = code {
        t.set("ssl-redirect-code", v.text, v.annotation)?;
    }
    if let Some(v) = read.take("ssl-redirect") {
        t.set("ssl-redirect", v.text, v.annotation)?;
        if code.is_none() && v.boolean()? {
            t.set("ssl-redirect-code", REDIRECT_CODE, v.annotation)?;
        }
    }
    if let Some(v) = read.take("ssl-redirect-port")
        && v.text.trim() != "443"
    {
        t.differs(
            v.annotation,
            "the redirect goes to hawser's HTTPS port (the setting httpsPort, as clients reach it)",
        );
    }
    if let Some(v) = read.take("ssl-passthrough") {
        t.set("ssl-passthrough", v.text, v.annotation)?;
    }
    Ok(())
}

/// "Request Set Header", "Response Set Header": one `Name value` per line.
fn headers(read: &mut Their<'_>, t: &mut Translation) -> Result<(), DialectError> {
    for (theirs, list) in [
        ("request-set-header", "request-headers"),
        ("response-set-header", "response-headers"),
    ] {
        let Some(v) = read.take(theirs) else {
            continue;
        };
        for line in v.text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (name, value) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| v.invalid("\"Name value\" lines"))?;
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
                .unwrap_or(value);
            t.header(list, name, value, v.annotation)?;
        }
    }
    Ok(())
}

/// "Access Control": comma-separated networks (a `patterns/` file is not
/// served); `whitelist` and `blacklist` are the older names.
fn access_lists(read: &mut Their<'_>, t: &mut Translation) -> Result<(), DialectError> {
    for (theirs, ours) in [
        ("allow-list", "allowlist-source-range"),
        ("whitelist", "allowlist-source-range"),
        ("deny-list", "denylist-source-range"),
        ("blacklist", "denylist-source-range"),
    ] {
        if let Some(v) = read.take(theirs) {
            if v.text.trim().starts_with("patterns/") {
                return Err(v.refused("pattern files are not served; list the networks"));
            }
            t.set(ours, v.text, v.annotation)?;
        }
    }
    Ok(())
}

/// "Authentication": `basic-auth` with a Secret holding one key per user
/// (a crypt(3) hash as its value), realm "Protected Content".
fn authentication(
    read: &mut Their<'_>,
    namespace: &str,
    t: &mut Translation,
) -> Result<(), DialectError> {
    let Some(v) = read.take("auth-type") else {
        return Ok(());
    };
    if v.text.trim() != "basic-auth" {
        return Err(v.invalid("basic-auth"));
    }
    t.set("auth-type", "basic", v.annotation)?;
    t.set("auth-secret-type", "auth-map", v.annotation)?;
    if let Some(secret) = read.take("auth-secret") {
        t.set(
            "auth-secret",
            same_namespace(&secret, namespace)?,
            secret.annotation,
        )?;
    }
    let realm = read.take("auth-realm");
    match realm {
        Some(r) => t.set("auth-realm", r.text, r.annotation)?,
        None => t.set("auth-realm", REALM, v.annotation)?,
    }
    Ok(())
}

/// "Rate Limit": requests per client in each `rate-limit-period` (1s
/// unless said; hawser counts per second), answered 403 unless said.
fn rate_limit(read: &mut Their<'_>, t: &mut Translation) -> Result<(), DialectError> {
    let period = read.take("rate-limit-period");
    let status = read.take("rate-limit-status-code");
    if let Some(v) = read.take("rate-limit-size") {
        t.differs(
            v.annotation,
            "hawser's table holds 100,000 clients whatever the size",
        );
    }
    let Some(v) = read.take("rate-limit-requests") else {
        if let Some(other) = period.or(status) {
            return Err(other.refused("it needs rate-limit-requests"));
        }
        return Ok(());
    };
    if let Some(p) = period
        && !matches!(p.text.trim(), "1s" | "1000ms" | "1000")
    {
        return Err(p.refused("hawser counts requests per second: only 1s is served"));
    }
    t.set("rate-limit-rps", v.text, v.annotation)?;
    t.set("rate-limit-burst", "0", v.annotation)?;
    match status {
        Some(s) => t.set("limit-status-code", s.text, s.annotation)?,
        None => t.set("limit-status-code", LIMIT_STATUS, v.annotation)?,
    }
    Ok(())
}

/// "Cors", with haproxytech's defaults: any origin, method and header,
/// no credentials, a max age of 5s.
fn cors(read: &mut Their<'_>, t: &mut Translation) -> Result<(), DialectError> {
    let Some(v) = read.take("cors-enable") else {
        return Ok(());
    };
    t.set("enable-cors", v.text, v.annotation)?;
    if !v.boolean()? {
        return Ok(());
    }
    match read.take("cors-allow-origin") {
        Some(o) => {
            let literal = o.text.trim() == "*"
                || !o
                    .text
                    .contains(['^', '$', '(', ')', '[', ']', '|', '?', '+', '\\', '*']);
            if !literal {
                return Err(o.refused("a regular expression of origins is not served; list them"));
            }
            t.set("cors-allow-origin", o.text, o.annotation)?;
        }
        None => t.set("cors-allow-origin", "*", v.annotation)?,
    }
    for name in ["cors-allow-methods", "cors-allow-headers"] {
        match read.take(name) {
            Some(o) => t.set(name, o.text, o.annotation)?,
            None => t.set(name, "*", v.annotation)?,
        }
    }
    match read.take("cors-allow-credentials") {
        Some(o) => t.set("cors-allow-credentials", o.text, o.annotation)?,
        None => t.set("cors-allow-credentials", "false", v.annotation)?,
    }
    match read.take("cors-max-age") {
        Some(o) => t.set("cors-max-age", seconds(&o)?.to_string(), o.annotation)?,
        None => t.set("cors-max-age", "5", v.annotation)?,
    }
    Ok(())
}

/// How HAProxy talks to the pods, on an Ingress and on a Service: "Server
/// Ssl", "Server Proto", "Server Ca", "Balance Algorithm", "Timeouts",
/// "Send Proxy Protocol", "X Forwarded For".
fn backend(read: &mut Their<'_>, namespace: &str, t: &mut Translation) -> Result<(), DialectError> {
    let ssl = match read.take("server-ssl") {
        Some(v) => Some((v, v.boolean()?)),
        None => None,
    };
    let proto = read.take("server-proto");
    if let Some(p) = proto
        && p.text.trim() != "h2"
    {
        return Err(p.invalid("h2"));
    }
    let protocol = match (ssl, proto) {
        (Some((v, true)), Some(_)) => Some(("GRPCS", v)),
        (Some((v, true)), None) => Some(("HTTPS", v)),
        (_, Some(p)) => Some(("H2C", p)),
        (Some((v, false)), None) => Some(("HTTP", v)),
        (None, None) => None,
    };
    if let Some((protocol, v)) = protocol {
        t.set("backend-protocol", protocol, v.annotation)?;
    }
    if let Some(v) = read.take("server-ca") {
        let name = same_namespace(&v, namespace)?;
        t.set("backend-ca-secret", name, v.annotation)?;
    }
    if let Some(v) = read.take("load-balance") {
        t.set("balance", v.text.trim(), v.annotation)?;
    }
    if let Some(v) = read.take("timeout-server") {
        t.set("timeout-server", v.text.trim(), v.annotation)?;
    }
    if let Some(v) = read.take("send-proxy-protocol") {
        let version = match v.text.trim() {
            "proxy" | "proxy-v1" => "v1",
            "proxy-v2" => "v2",
            "proxy-v2-ssl" | "proxy-v2-ssl-cn" => {
                return Err(v.refused("the PROXY protocol's TLS fields are not served"));
            }
            _ => return Err(v.invalid("proxy, proxy-v1 or proxy-v2")),
        };
        t.set("send-proxy-protocol", version, v.annotation)?;
    }
    if let Some(v) = read.take("forwarded-for")
        && !v.boolean()?
    {
        t.differs(v.annotation, "X-Forwarded-For is always set");
    }
    Ok(())
}

/// A haproxytech time ("Time": a number of milliseconds, or with a unit)
/// in whole seconds.
fn seconds(v: &Value<'_>) -> Result<u64, DialectError> {
    let text = v.text.trim();
    let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &text[digits.len()..];
    let number: u64 = (!digits.is_empty() && digits.len() <= 9)
        .then(|| digits.parse().ok())
        .flatten()
        .ok_or_else(|| v.invalid("a time (5s, 1m, or milliseconds)"))?;
    let factor_ms: u64 = match unit {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(v.invalid("a time (5s, 1m, or milliseconds)")),
    };
    Ok(number * factor_ms / 1_000)
}
