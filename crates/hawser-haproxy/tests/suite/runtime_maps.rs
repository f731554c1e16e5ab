//! Map commands against a real HAProxy: versioned replacement, the
//! empty-commit trap, one-line edits, edits sent together.

use crate::support;

use hawser_haproxy::{CommandBatch, MapInfo, RuntimeApi, SocketError};
use support::running::RunningHaproxy;

const MAP: &str = "maps/hosts.map";

async fn map_info(api: &RuntimeApi) -> MapInfo {
    api.show_maps()
        .await
        .unwrap()
        .into_iter()
        .find(|info| info.file == MAP)
        .expect("hosts.map is not listed")
}

fn owned(entries: &[(&str, &str)]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

#[tokio::test]
async fn replace_map_swaps_every_entry() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;
    assert_eq!(
        api.show_map(MAP).await.unwrap(),
        owned(&[("seed.example.test", "be_app")])
    );

    let entries = [
        ("a.example.test", "be_app"),
        ("b.example.test", "value with spaces;and a semicolon"),
        ("c.example.test", "back\\slash"),
    ];
    let version = api.replace_map(MAP, &entries).await.unwrap();
    assert_eq!(api.show_map(MAP).await.unwrap(), owned(&entries));
    let info = map_info(api).await;
    assert_eq!((info.curr_ver, info.next_ver), (version, version));
    assert_eq!(info.entry_cnt, 3);

    // Bigger than one CLI buffer: sent as several payload chunks.
    let many: Vec<(String, String)> = (0..2000)
        .map(|i| {
            (
                format!("host{i:05}.example.test"),
                format!("backend_{i:05}"),
            )
        })
        .collect();
    let version = api.replace_map(MAP, &many).await.unwrap();
    assert_eq!(api.show_map(MAP).await.unwrap(), many);
    assert_eq!(map_info(api).await.curr_ver, version);

    // Committing an older version is refused.
    let error = api.commit_map(version - 1, MAP).await.unwrap_err();
    assert!(
        matches!(&error, SocketError::Rejected { reply, .. } if reply == "Version number out of range."),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_short_payload_is_caught_before_commit() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;
    let before = map_info(api).await;

    // What replace_map guards against: fewer entries reach the version
    // than intended (here, simulated by sending only the first one).
    let intended = [("a.example.test", "be_app"), ("b.example.test", "be_app")];
    let version = api.prepare_map(MAP).await.unwrap();
    assert_eq!(version, before.next_ver + 1);
    api.add_map_payload(version, MAP, &intended[..1])
        .await
        .unwrap();
    let staged = api.show_map_version(version, MAP).await.unwrap();
    assert_ne!(staged.len(), intended.len());

    // Not committed: the live map is untouched.
    assert_eq!(map_info(api).await.curr_ver, before.curr_ver);
    assert_eq!(
        api.show_map(MAP).await.unwrap(),
        owned(&[("seed.example.test", "be_app")])
    );
    // A version nobody filled lists as empty, not as an error.
    assert!(
        api.show_map_version(version + 5, MAP)
            .await
            .unwrap()
            .is_empty()
    );

    // The abandoned version does not stop the next replacement.
    api.replace_map(MAP, &intended).await.unwrap();
    assert_eq!(api.show_map(MAP).await.unwrap(), owned(&intended));
}

#[tokio::test]
async fn one_line_edits_keep_spaces_and_semicolons() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;

    api.add_map(MAP, "x.example.test", "be one;two")
        .await
        .unwrap();
    api.set_map(MAP, "seed.example.test", "be_other value")
        .await
        .unwrap();
    assert_eq!(
        api.show_map(MAP).await.unwrap(),
        owned(&[
            ("seed.example.test", "be_other value"),
            ("x.example.test", "be one;two"),
        ])
    );
    api.del_map(MAP, "x.example.test").await.unwrap();
    let error = api.del_map(MAP, "x.example.test").await.unwrap_err();
    assert!(
        matches!(&error, SocketError::Rejected { reply, .. } if reply == "Key not found."),
        "{error:?}"
    );
    let error = api.set_map(MAP, "missing.test", "v").await.unwrap_err();
    assert!(
        matches!(&error, SocketError::Rejected { reply, .. } if reply == "entry not found."),
        "{error:?}"
    );
    let error = api.show_map("maps/nope.map").await.unwrap_err();
    assert!(
        matches!(&error, SocketError::Rejected { reply, .. } if reply.starts_with("Unknown map identifier")),
        "{error:?}"
    );
}

#[tokio::test]
async fn map_edits_in_one_session_each_take_and_a_failed_one_is_named() {
    let haproxy = RunningHaproxy::start().await;
    let api = &haproxy.runtime;

    // Values with `;` and spaces: escaped, they stay inside their command.
    let mut batch = CommandBatch::new();
    batch.add_map(MAP, "x.example.test", "be one;two").unwrap();
    batch.set_map(MAP, "seed.example.test", "be_other").unwrap();
    batch.add_map(MAP, "y.example.test", "be_y").unwrap();
    api.run_batch(&batch).await.unwrap();
    assert_eq!(
        api.show_map(MAP).await.unwrap(),
        owned(&[
            ("seed.example.test", "be_other"),
            ("x.example.test", "be one;two"),
            ("y.example.test", "be_y"),
        ])
    );

    // HAProxy carries on past a failed command; the batch names it.
    let mut batch = CommandBatch::new();
    batch.del_map(MAP, "x.example.test").unwrap();
    batch.del_map(MAP, "missing.test").unwrap();
    batch.del_map(MAP, "y.example.test").unwrap();
    let error = api.run_batch(&batch).await.unwrap_err();
    assert!(
        matches!(&error, SocketError::Rejected { command, reply }
            if command == "del map maps/hosts.map missing.test" && reply == "Key not found."),
        "{error:?}"
    );
    assert_eq!(
        api.show_map(MAP).await.unwrap(),
        owned(&[("seed.example.test", "be_other")])
    );
}
