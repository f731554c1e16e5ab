//! ingress-nginx's annotations (`nginx.ingress.kubernetes.io/`), onto
//! hawser's. Formats and defaults are ingress-nginx's own, from its
//! `docs/user-guide/nginx-configuration/annotations.md` (section named
//! beside each) and `configmap.md` for the defaults a ConfigMap gives.
//!
//! Most of hawser's own names are ingress-nginx's, with the same formats
//! and defaults (`docs/annotations.md`), so those pass as they are. On a
//! Service ingress-nginx reads nothing.

use super::{DialectError, Target, Their, Translation, Value};

pub(super) const PREFIX: &str = "nginx.ingress.kubernetes.io/";

/// Same name, same format, same default as hawser's.
const SAME: &[&str] = &[
    "ssl-redirect",
    "permanent-redirect",
    "permanent-redirect-code",
    "temporal-redirect",
    "temporal-redirect-code",
    "app-root",
    "rewrite-target",
    "denylist-source-range",
    "auth-realm",
    "auth-secret-type",
    "auth-response-headers",
    "limit-connections",
    "enable-cors",
    "cors-allow-origin",
    "cors-allow-methods",
    "cors-allow-headers",
    "cors-expose-headers",
    "cors-allow-credentials",
    "cors-max-age",
    "proxy-body-size",
    "backend-protocol",
    "affinity",
    "session-cookie-name",
    "session-cookie-max-age",
    "ssl-passthrough",
    "upstream-vhost",
    "server-alias",
    "from-to-www-redirect",
];

/// "Rate Limiting": the burst is the rate times this unless
/// `limit-burst-multiplier` says otherwise.
const BURST_MULTIPLIER: u64 = 5;
/// configmap.md `limit-req-status-code` and `limit-conn-status-code`.
const LIMIT_STATUS: &str = "503";

pub(super) fn translate(
    read: &mut Their<'_>,
    target: Target,
    namespace: &str,
    t: &mut Translation,
) -> Result<(), DialectError> {
    if target == Target::Service {
        return Ok(());
    }
    // "Canary": the same names too.
    for name in SAME.iter().chain(super::super::canary::CANARY_ANNOTATIONS) {
        if let Some(v) = read.take(name) {
            t.set(name, v.text, v.annotation)?;
        }
    }
    // "Use Regex": ingress-nginx then matches every path of the host as a
    // regex, whatever Ingress it is on; `rewrite-target` does the same.
    match read.take("use-regex") {
        Some(v) if v.boolean()? => t.set("use-regex", "host", v.annotation)?,
        Some(v) => t.set("use-regex", "false", v.annotation)?,
        None => {
            if let Some(&(whole, _)) = read.annotations.get("rewrite-target") {
                t.set("use-regex", "host", whole)?;
            }
        }
    }
    // "Whitelist source range"; allowlist-source-range is its newer name.
    for name in ["whitelist-source-range", "allowlist-source-range"] {
        if let Some(v) = read.take(name) {
            t.set("allowlist-source-range", v.text, v.annotation)?;
        }
    }
    // "Server-side HTTPS enforcement through redirect".
    if let Some(v) = read.take("force-ssl-redirect")
        && v.boolean()?
    {
        t.set("ssl-redirect", "true", v.annotation)?;
        t.differs(
            v.annotation,
            "only the Ingress's TLS hosts are redirected to HTTPS",
        );
    }
    authentication(read, namespace, t)?;
    rate_limits(read, t)?;
    if let Some(v) = read.take("x-forwarded-prefix") {
        t.header(
            "request-headers",
            "x-forwarded-prefix",
            v.text.trim(),
            v.annotation,
        )?;
    }
    timeouts(read, t)?;
    backend_tls(read, namespace, t)?;
    client_certificates(read, namespace, t)?;
    Ok(())
}

/// "Authentication" and "External Authentication".
fn authentication(
    read: &mut Their<'_>,
    namespace: &str,
    t: &mut Translation,
) -> Result<(), DialectError> {
    if let Some(v) = read.take("auth-type") {
        match v.text.trim() {
            "basic" => t.set("auth-type", "basic", v.annotation)?,
            "digest" => {
                return Err(v.refused("digest authentication is not served; use basic"));
            }
            _ => return Err(v.invalid("basic or digest")),
        }
    }
    if let Some(v) = read.take("auth-secret") {
        let name = same_namespace(&v, namespace)?;
        t.set("auth-secret", name, v.annotation)?;
    }
    for name in ["auth-url", "auth-signin"] {
        if let Some(v) = read.take(name) {
            if v.text.contains('$') {
                return Err(v.refused(
                    "nginx variables ($host, $escaped_request_uri, …) are not served; write the URL out",
                ));
            }
            t.set(name, v.text, v.annotation)?;
        }
    }
    if let Some(v) = read.take("auth-method")
        && !v.text.trim().eq_ignore_ascii_case("GET")
    {
        return Err(v.refused("the auth sub-request is always a GET"));
    }
    Ok(())
}

/// "Rate Limiting": `limit-rps` with a burst of `limit-burst-multiplier`
/// times it; over either limit ingress-nginx answers 503.
fn rate_limits(read: &mut Their<'_>, t: &mut Translation) -> Result<(), DialectError> {
    let multiplier = match read.take("limit-burst-multiplier") {
        Some(v) => {
            if !read.has("limit-rps") {
                return Err(v.refused("it needs limit-rps"));
            }
            Some((v, whole(&v)?))
        }
        None => None,
    };
    if let Some(v) = read.take("limit-rps") {
        let rps = whole(&v)?;
        let burst = rps.saturating_mul(multiplier.map_or(BURST_MULTIPLIER, |(_, m)| m));
        t.set("rate-limit-rps", rps.to_string(), v.annotation)?;
        t.set("rate-limit-burst", burst.to_string(), v.annotation)?;
        t.set("limit-status-code", LIMIT_STATUS, v.annotation)?;
        t.differs(
            v.annotation,
            "requests are counted over each second (up to the rate plus its burst in any one second), where nginx drains a bucket",
        );
    }
    if let Some(v) = read.annotations.get("limit-connections") {
        t.set("limit-status-code", LIMIT_STATUS, v.0)?;
    }
    Ok(())
}

/// "Custom timeouts": unitless seconds. HAProxy has one server timeout for
/// reading and sending: the larger of the two.
fn timeouts(read: &mut Their<'_>, t: &mut Translation) -> Result<(), DialectError> {
    let read_timeout = read.take("proxy-read-timeout");
    let send_timeout = read.take("proxy-send-timeout");
    let mut largest: Option<(u64, Value<'_>)> = None;
    for v in [read_timeout, send_timeout].into_iter().flatten() {
        let seconds = whole(&v)?;
        if largest.is_none_or(|(s, _)| seconds > s) {
            largest = Some((seconds, v));
        }
    }
    if let Some(v) = read.take("proxy-connect-timeout") {
        t.set("timeout-connect", format!("{}s", whole(&v)?), v.annotation)?;
    }
    if let Some((seconds, v)) = largest {
        t.set("timeout-server", format!("{seconds}s"), v.annotation)?;
        if read_timeout.is_some() && send_timeout.is_some() {
            t.differs(
                v.annotation,
                "HAProxy has one server timeout: the larger of proxy-read-timeout and proxy-send-timeout",
            );
        }
    }
    Ok(())
}

/// "Backend Certificate Authentication": the pods are verified only with
/// `proxy-ssl-verify: on` (its default is off), against `proxy-ssl-name`.
fn backend_tls(
    read: &mut Their<'_>,
    namespace: &str,
    t: &mut Translation,
) -> Result<(), DialectError> {
    let secret = read.take("proxy-ssl-secret");
    let verify = match read.take("proxy-ssl-verify") {
        Some(v) => match v.text.trim() {
            "on" => Some(v),
            "off" => None,
            _ => return Err(v.invalid("on or off")),
        },
        None => None,
    };
    if let Some(v) = secret {
        let name = same_namespace(&v, namespace)?;
        if verify.is_some() {
            t.set("backend-ca-secret", name, v.annotation)?;
        }
        t.differs(
            v.annotation,
            "its ca.crt verifies the pods (with proxy-ssl-verify: on); no client certificate is shown to them",
        );
    } else if let Some(v) = verify {
        return Err(v.refused("it needs proxy-ssl-secret"));
    }
    if let Some(v) = read.take("proxy-ssl-name") {
        t.set("backend-sni", v.text.trim(), v.annotation)?;
        let sent = read
            .take("proxy-ssl-server-name")
            .is_some_and(|s| s.text.trim() == "on");
        if !sent {
            t.differs(v.annotation, "the name is sent as SNI as well");
        }
    }
    Ok(())
}

/// "Client Certificate Authentication".
fn client_certificates(
    read: &mut Their<'_>,
    namespace: &str,
    t: &mut Translation,
) -> Result<(), DialectError> {
    let Some(secret) = read.take("auth-tls-secret") else {
        return Ok(());
    };
    let verify = read.take("auth-tls-verify-client");
    let mode = verify.map_or("on", |v| v.text.trim());
    match mode {
        "off" => return Ok(()),
        "on" | "optional" => {}
        "optional_no_ca" => {
            let v = verify.unwrap_or(secret);
            return Err(v.refused(
                "optional_no_ca (a certificate that does not verify passes) is not served",
            ));
        }
        _ => {
            let v = verify.unwrap_or(secret);
            return Err(v.invalid("on, off, optional or optional_no_ca"));
        }
    }
    t.set(
        "client-auth-secret",
        same_namespace(&secret, namespace)?,
        secret.annotation,
    )?;
    if let Some(v) = verify {
        t.set("client-auth-verify", mode, v.annotation)?;
    }
    if let Some(v) = read.take("auth-tls-verify-depth") {
        t.differs(v.annotation, "HAProxy verifies the whole chain");
    }
    if let Some(v) = read.take("auth-tls-pass-certificate-to-upstream")
        && v.boolean()?
    {
        t.set("client-auth-pass-certificate", "true", v.annotation)?;
        t.differs(
            v.annotation,
            "the header ssl-client-cert holds the certificate as base64 DER, not URL-encoded PEM",
        );
    }
    Ok(())
}

/// A whole number (ingress-nginx's counts and seconds).
fn whole(v: &Value<'_>) -> Result<u64, DialectError> {
    let text = v.text.trim();
    (!text.is_empty() && text.len() <= 9 && text.bytes().all(|b| b.is_ascii_digit()))
        .then(|| text.parse().ok())
        .flatten()
        .ok_or_else(|| v.invalid("a whole number"))
}

/// A Secret named `name` or `<namespace>/name`, which must be the
/// Ingress's own namespace (ingress-nginx's default:
/// `allow-cross-namespace-resources: false`).
pub(super) fn same_namespace(v: &Value<'_>, namespace: &str) -> Result<String, DialectError> {
    let text = v.text.trim();
    match text.split_once('/') {
        None => Ok(text.to_string()),
        Some((ns, name)) if ns == namespace => Ok(name.to_string()),
        Some(_) => Err(v.refused(format!(
            "a Secret of another namespace than the Ingress's ({namespace}) is not served"
        ))),
    }
}
