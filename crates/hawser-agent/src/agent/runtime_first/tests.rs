//! What a configuration that passed the config policy is judged against,
//! and what ends a step of a runtime change early.

use hawser_plan::FileKind;

use super::*;

fn files(config: &str, crt_list: &str, routes: &str) -> FileSet {
    let mut files = FileSet::default();
    files.insert(CONFIG_PATH, FileKind::Config, config);
    files.insert("certs/crt-list.txt", FileKind::CrtList, crt_list);
    files.insert("maps/routes.map", FileKind::Map, routes);
    files
}

#[test]
fn a_passed_configuration_is_the_reference_while_the_files_it_read_stay() {
    let passed = PolicyPassed {
        files: Arc::new(files("global\n", "certs/a.pem\n", "a be_a\n")),
        read: ["certs/crt-list.txt".to_string()].into(),
    };
    let reference = Some(&b"global\n"[..]);
    // Another configuration, or map entries (data the policy never reads):
    // judged by what differs from the one that passed.
    assert_eq!(
        passed.config_for(&files("global\n x\n", "certs/a.pem\n", "b be_b\n")),
        reference
    );
    // A file the policy read that changed, or is gone: judged whole.
    assert_eq!(
        passed.config_for(&files("global\n", "/etc/x.pem\n", "a be_a\n")),
        None
    );
    let mut gone = FileSet::default();
    gone.insert(CONFIG_PATH, FileKind::Config, "global\n");
    assert_eq!(passed.config_for(&gone), None);
}

#[tokio::test(start_paused = true)]
async fn a_step_of_a_runtime_change_ends_when_a_newer_version_comes() {
    let (submit, newer) = watch::channel(None);
    let settle = || tokio::time::sleep(SETTLE_AFTER_CHANGE);
    let began = Instant::now();
    assert_eq!(unless_newer(&newer, settle()).await, Some(()));
    assert_eq!(
        began.elapsed(),
        SETTLE_AFTER_CHANGE,
        "nothing newer: the whole settle"
    );

    let began = Instant::now();
    let waiting = tokio::spawn({
        let newer = newer.clone();
        async move { unless_newer(&newer, settle()).await }
    });
    tokio::time::sleep(Duration::from_millis(3)).await;
    submit.send(None).expect("the agent listens");
    assert_eq!(
        waiting.await.expect("settled"),
        None,
        "a newer version ends it"
    );
    assert_eq!(began.elapsed(), Duration::from_millis(3));
    // The version that ended it is still to be seen by the agent's loop.
    assert!(newer.has_changed().expect("open"));

    // One already waiting when the step begins ends it at once.
    let began = Instant::now();
    assert_eq!(unless_newer(&newer, settle()).await, None);
    assert_eq!(began.elapsed(), Duration::ZERO);
}
