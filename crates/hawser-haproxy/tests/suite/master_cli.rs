//! The master CLI against a real HAProxy: reloads that succeed, fail, or
//! collide.

use crate::support;

use hawser_haproxy::{ProcTable, SocketError};
use support::running::{RunningHaproxy, config, until_not_busy};

async fn show_proc(haproxy: &RunningHaproxy) -> ProcTable {
    until_not_busy(|| haproxy.master.show_proc()).await.unwrap()
}

#[tokio::test]
async fn good_reload_forks_a_new_worker_serving_the_new_config() {
    let haproxy = RunningHaproxy::start().await;
    let before = show_proc(&haproxy).await;
    assert_eq!(before.workers.len(), 1, "{before:?}");
    assert!(haproxy.get("/version").await.contains("ok v1"));

    haproxy.write("haproxy.cfg", &config("v2"));
    let reply = haproxy.master.reload().await.unwrap();
    assert!(reply.success, "{}", reply.startup_log);
    assert!(
        reply.startup_log.contains("Loading success."),
        "{}",
        reply.startup_log
    );

    let after = show_proc(&haproxy).await;
    assert_eq!(after.master.pid, before.master.pid);
    assert_eq!(after.master.reloads, before.master.reloads + 1);
    assert_eq!(after.failed_reloads, Some(0));
    assert_eq!(after.workers.len(), 1, "{after:?}");
    assert_ne!(after.workers[0].pid, before.workers[0].pid);
    haproxy.wait_ready().await;
    assert!(haproxy.get("/version").await.contains("ok v2"));

    let logs = until_not_busy(|| haproxy.master.show_startup_logs())
        .await
        .unwrap();
    assert!(logs.contains("Loading success."), "{logs}");
}

#[tokio::test]
async fn bad_reload_reports_the_alert_and_keeps_the_old_worker() {
    let haproxy = RunningHaproxy::start().await;
    let before = show_proc(&haproxy).await;

    let broken = config("v2").replace("defaults\n", "defaults\n    bogus_keyword\n");
    haproxy.write("haproxy.cfg", &broken);
    let reply = haproxy.master.reload().await.unwrap();
    assert!(!reply.success);
    assert!(
        reply.startup_log.contains("[ALERT]")
            && reply
                .startup_log
                .contains("unknown keyword 'bogus_keyword'"),
        "{}",
        reply.startup_log
    );

    // The old worker stays, one reload older. HAProxy 3.0 still lists it
    // under `# workers`; 3.1 and later mark every worker leaving before the
    // new one loads, so after a failed load it is under `# old workers`,
    // and still the one serving (show info below).
    let after = show_proc(&haproxy).await;
    assert_eq!(after.failed_reloads, Some(1));
    let listed: Vec<_> = after.workers.iter().chain(&after.old_workers).collect();
    assert_eq!(listed.len(), 1, "{after:?}");
    assert_eq!(listed[0].pid, before.workers[0].pid);
    assert_eq!(listed[0].reloads, before.workers[0].reloads + 1);
    let info = until_not_busy(|| haproxy.runtime.show_info())
        .await
        .unwrap();
    assert_eq!(info["Pid"], before.workers[0].pid.to_string());
    assert!(haproxy.get("/version").await.contains("ok v1"));
    let logs = until_not_busy(|| haproxy.master.show_startup_logs())
        .await
        .unwrap();
    assert!(logs.contains("bogus_keyword"), "{logs}");

    // A good reload resets the failure counter.
    haproxy.write("haproxy.cfg", &config("v3"));
    assert!(
        until_not_busy(|| haproxy.master.reload())
            .await
            .unwrap()
            .success
    );
    assert_eq!(show_proc(&haproxy).await.failed_reloads, Some(0));
}

#[tokio::test]
async fn concurrent_reloads_succeed_or_are_busy_never_fail() {
    let haproxy = RunningHaproxy::start().await;
    let (a, b, c, proc) = tokio::join!(
        haproxy.master.reload(),
        haproxy.master.reload(),
        haproxy.master.reload(),
        haproxy.master.show_proc(),
    );
    let mut succeeded = 0;
    for result in [a, b, c] {
        match result {
            Ok(reply) => {
                assert!(reply.success, "misreported failure: {}", reply.startup_log);
                succeeded += 1;
            }
            Err(error) => assert!(error.is_busy(), "{error:?}"),
        }
    }
    assert!(succeeded >= 1, "no reload went through");
    if let Err(error) = proc {
        assert!(error.is_busy(), "{error:?}");
    }
    haproxy.wait_ready().await;
    let table = show_proc(&haproxy).await;
    assert_eq!(table.failed_reloads, Some(0));
}

#[tokio::test]
async fn show_info_names_the_current_worker() {
    let haproxy = RunningHaproxy::start().await;
    let table = show_proc(&haproxy).await;
    let info = haproxy.runtime.show_info().await.unwrap();
    assert_eq!(info["Pid"], table.workers[0].pid.to_string());
    assert!(info["Version"].starts_with("3."), "{info:?}");
    assert!(info.contains_key("Uptime_sec"));
}

#[tokio::test]
async fn a_worker_socket_is_rejected_not_misparsed_as_a_master() {
    let haproxy = RunningHaproxy::start().await;
    // `show proc` on the worker socket is an unknown command there.
    let error = hawser_haproxy::MasterCli::new(haproxy.path("admin.sock"))
        .show_proc()
        .await
        .unwrap_err();
    assert!(matches!(error, SocketError::Rejected { .. }), "{error:?}");
}
