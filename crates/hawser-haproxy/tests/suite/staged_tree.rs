//! One validation of a staged tree (policy, `haproxy -c`, the global
//! checks, the culprit), with the real HAProxy.

use crate::support;

use hawser_haproxy::{CheckError, ConfigPolicy, StagedTreeError};

/// The nearest `# from:` mark at or above `line`.
fn marks(config: &str, line: u32) -> Option<String> {
    let end = usize::try_from(line).ok()?;
    config
        .lines()
        .take(end)
        .filter_map(|l| l.trim_start().strip_prefix("# from: "))
        .last()
        .map(str::to_string)
}

const DEFAULTS: &str =
    "defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n";

/// HAProxy will not start (nor pass `-c`) without a listener.
const LISTENER: &str = "frontend web\n  bind 127.0.0.1:18099\n";

async fn check(config: &str) -> Result<(), StagedTreeError> {
    let config = &format!("{config}{LISTENER}");
    let tree = support::tree(&[("haproxy.cfg", config)]);
    let policy = ConfigPolicy::default().name_culprits(marks, Vec::new());
    support::real_haproxy()
        .check_staged_tree(&policy, tree.path(), "haproxy.cfg", config)
        .await
        .map(|_| ())
}

#[tokio::test]
async fn a_valid_tree_passes() {
    check(&format!("global\n  maxconn 100\n{DEFAULTS}"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_tree_haproxy_accepts_but_cannot_run_is_unrunnable_naming_its_culprit() {
    let config = format!(
        "global\n  # from: HawserConfig default\n  chroot /nonexistent-hawser-dir\n{DEFAULTS}"
    );
    let error = check(&config).await.unwrap_err();
    assert!(
        matches!(
            &error,
            StagedTreeError::Unrunnable { error: CheckError::MissingChroot { line: 3, .. }, culprit: Some(c) }
                if c == "HawserConfig default"
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .ends_with("\n(at haproxy.cfg line 3, from HawserConfig default)"),
        "{error}"
    );
}

#[tokio::test]
async fn a_line_haproxy_rejects_is_blamed_on_its_mark() {
    let config = format!(
        "global\n  maxconn 100\n{DEFAULTS}# from: Service app/web port 80\nbackend be_app_web_80\n  no-such-keyword\n"
    );
    let error = check(&config).await.unwrap_err();
    let StagedTreeError::Rejected { line, culprit, .. } = &error else {
        panic!("expected a rejection: {error}");
    };
    assert_eq!(*line, Some(10), "{error}");
    assert_eq!(
        culprit.as_deref(),
        Some("Service app/web port 80"),
        "{error}"
    );
    assert_eq!(error.metric_label(), "check_failed");
}

#[tokio::test]
async fn a_refused_tree_never_reaches_haproxy() {
    let config = format!("global\n  lua-load /etc/evil.lua\n{DEFAULTS}");
    let error = check(&config).await.unwrap_err();
    assert!(matches!(error, StagedTreeError::Refused(_)), "{error}");
}
