//! The full check of a live runtime change left to a newer version: when a
//! newer version comes while a runtime change's tree is staged or checked,
//! the agent applies the newer one at once, and the check of its tree
//! (which holds the earlier change too) stands for both. `current` never
//! names a tree no check passed, and a refused check takes HAProxy back to
//! the last version one passed, losing no change a check would pass.
//!
//! Each version here carries a large map that every `haproxy -c` loads, so
//! that a check lasts long enough (hundreds of milliseconds) for a newer
//! version to come while it runs, on any machine.
//!
//! Oracle: the answers of the real HAProxy, the worker PID (no reload), the
//! apply outcomes, where `current` points, and what an Apply over the
//! controller contract answers.

use std::sync::Arc;

use hawser_agent::control::{ControlConfig, ControlService};
use hawser_agent::{
    AgentHandle, AgentPaths, ApplyKind, ApplyOutcome, Desired, TreeStore, VersionName,
};
use hawser_plan::{FileKind, Generation, PLAN_FORMAT, digest, encode};
use hawser_proto::v1;
use hawser_proto::v1::agent_server::Agent as _;
use tokio::sync::broadcast;

use crate::common::{TIMEOUT, free_port, get_body};
use crate::runtime_first::{expect_rejected, outcome, start, version};

const SLOW_MAP: &str = "maps/slow.map";

/// `version` with a map of many entries in an unused backend: nothing
/// serves it, but every full check loads it.
fn slow_to_check(
    paths: &AgentPaths,
    generation: Generation,
    port: u16,
    answer: &str,
    extra: &str,
) -> Desired {
    let extra = format!(
        "backend slow\n  http-request set-var(txn.slow) path,map({SLOW_MAP},none)\n{extra}"
    );
    let mut desired = version(paths, generation, port, answer, &extra);
    static ENTRIES: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let entries = ENTRIES.get_or_init(|| (0..200_000).map(|i| format!("/k{i} v{i}\n")).collect());
    Arc::make_mut(&mut desired.files).insert(SLOW_MAP, FileKind::Map, entries.as_str());
    desired
}

/// Waits until HAProxy answers `/x` with `answer`.
async fn until_answered(port: u16, answer: &str) {
    tokio::time::timeout(TIMEOUT, async {
        while get_body(port, "/x").await != answer {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("HAProxy never answered {answer:?}"));
}

/// The version `current` names.
fn current(paths: &AgentPaths) -> String {
    let target = std::fs::read_link(paths.tree().join("current")).expect("current");
    let name = target.file_name().expect("a version").to_string_lossy();
    name.into_owned()
}

fn name_of(generation: Generation) -> String {
    VersionName(generation).to_string()
}

fn expect_left_to_newer(outcome: &ApplyOutcome, generation: Generation) {
    assert_eq!(outcome.generation, generation, "{outcome:?}");
    assert_eq!(outcome.kind, ApplyKind::Runtime, "{outcome:?}");
    assert!(
        outcome
            .summary
            .contains("full check left to a newer version"),
        "{outcome:?}"
    );
}

/// The next outcome, for `generation`.
async fn outcome_of(
    outcomes: &mut broadcast::Receiver<ApplyOutcome>,
    generation: Generation,
) -> ApplyOutcome {
    let outcome = outcome(outcomes).await;
    assert_eq!(outcome.generation, generation, "{outcome:?}");
    outcome
}

/// An agent serving a first version ("old"), to which a second ("mid",
/// with `second_extra`) was applied at runtime, and a third (`third`, with
/// `third_extra`) submitted as soon as the second answered: the second's
/// check was left to the third.
struct Behind {
    _state: tempfile::TempDir,
    paths: AgentPaths,
    agent: hawser_agent::Agent,
    outcomes: broadcast::Receiver<ApplyOutcome>,
    port: u16,
    generations: [Generation; 3],
    /// The worker serving the first version.
    worker: Option<u32>,
    /// The version `current` named while the first one served.
    checked: String,
}

impl Behind {
    async fn start(second_extra: &str, third: &str, third_extra: &str) -> Behind {
        let (state, paths, agent) = start().await;
        let handle = agent.handle();
        let mut outcomes = handle.outcomes();
        let port = free_port();
        let first = handle.next_generation();
        let generations = [first, first.next(), first.next().next()];

        handle.submit(slow_to_check(&paths, first, port, "old", ""));
        assert_eq!(outcome(&mut outcomes).await.kind, ApplyKind::Reload);
        let worker = handle.status().borrow().worker_pid;
        let checked = current(&paths);

        let second = generations[1];
        handle.submit(slow_to_check(&paths, second, port, "mid", second_extra));
        until_answered(port, "mid").await;
        // Live, its tree being staged or checked: the next version comes.
        let third = slow_to_check(&paths, generations[2], port, third, third_extra);
        handle.submit(third);
        expect_left_to_newer(&outcome_of(&mut outcomes, second).await, second);
        Behind {
            _state: state,
            paths,
            agent,
            outcomes,
            port,
            generations,
            worker,
            checked,
        }
    }

    fn status(&self) -> hawser_agent::AgentStatus {
        self.agent.handle().status().borrow().clone()
    }

    async fn stop(self) {
        self.agent.shutdown().await.expect("shutdown");
    }
}

/// A line the policy lets through, which only `haproxy -c` refuses.
fn refused_by_haproxy(keyword: &str) -> String {
    format!("backend b\n  {keyword}\n")
}

#[tokio::test]
async fn a_newer_version_is_applied_without_waiting_for_the_check_of_a_live_one() {
    let mut behind = Behind::start("", "new", "").await;
    let [_, _, third] = behind.generations;
    assert_eq!(
        current(&behind.paths),
        behind.checked,
        "a tree whose check was left to a newer version never becomes current"
    );

    let applied = outcome_of(&mut behind.outcomes, third).await;
    assert_eq!(applied.kind, ApplyKind::Runtime, "{applied:?}");
    assert!(!applied.summary.contains("left to"), "{applied:?}");
    assert_eq!(get_body(behind.port, "/x").await, "new");
    assert_eq!(
        current(&behind.paths),
        name_of(third),
        "its checked tree is current"
    );
    let status = behind.status();
    assert_eq!(status.worker_pid, behind.worker, "no reload");
    assert_eq!(status.applied_generation, Some(third), "{status:?}");
    behind.stop().await;
}

#[tokio::test]
async fn a_refused_newer_version_keeps_the_change_left_unchecked_once_its_own_check_passes() {
    let broken = refused_by_haproxy("no-such-keyword");
    let mut behind = Behind::start("", "broken", &broken).await;
    let [_, second, third] = behind.generations;
    expect_rejected(
        outcome_of(&mut behind.outcomes, third).await,
        "no-such-keyword",
    );

    // The refused version is undone; the one whose check it took over is
    // checked on its own, passes, and stays.
    assert_eq!(get_body(behind.port, "/x").await, "mid");
    assert_eq!(
        current(&behind.paths),
        name_of(second),
        "the version left unchecked was checked"
    );
    let status = behind.status();
    assert_eq!(status.applied_generation, Some(second), "{status:?}");
    assert_eq!(status.worker_pid, behind.worker, "no reload");
    behind.stop().await;
}

#[tokio::test]
async fn a_refused_check_takes_haproxy_back_to_the_last_version_one_passed() {
    // Both trees are refused by `haproxy -c` alone, each its own way.
    let second_broken = refused_by_haproxy("first-bad-keyword");
    let third_broken = refused_by_haproxy("second-bad-keyword");
    let mut behind = Behind::start(&second_broken, "new", &third_broken).await;
    let [first, _, third] = behind.generations;
    expect_rejected(
        outcome_of(&mut behind.outcomes, third).await,
        "second-bad-keyword",
    );

    assert_eq!(
        get_body(behind.port, "/x").await,
        "old",
        "every change no check passed is undone"
    );
    assert_eq!(
        current(&behind.paths),
        behind.checked,
        "a refused tree never becomes current"
    );
    let status = behind.status();
    assert_eq!(status.applied_generation, Some(first), "{status:?}");
    assert_eq!(status.worker_pid, behind.worker, "no reload");
    behind.stop().await;
}

#[tokio::test]
async fn in_a_stream_of_versions_a_check_is_made_to_its_end_within_a_second() {
    let (_state, paths, agent) = start().await;
    let handle = agent.handle();
    let mut outcomes = handle.outcomes();
    let port = free_port();
    let mut generation = handle.next_generation();
    handle.submit(slow_to_check(&paths, generation, port, "v0", ""));
    assert_eq!(outcome(&mut outcomes).await.kind, ApplyKind::Reload);
    let first = current(&paths);

    // A version every 40 ms or so for 2.5 s: each comes while the one
    // before is settled, staged or checked.
    const VERSIONS: usize = 62;
    let last = (0..VERSIONS).fold(generation, |g, _| g.next());
    let collected = tokio::spawn(async move {
        let mut seen = Vec::new();
        loop {
            match outcomes.recv().await {
                Ok(outcome) if outcome.generation == last => return seen,
                Ok(outcome) => seen.push(outcome),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => panic!("the agent stopped"),
            }
        }
    });
    let mut moved_during_the_stream = false;
    for index in 1..=VERSIONS {
        generation = generation.next();
        let answer = format!("v{index}");
        handle.submit(slow_to_check(&paths, generation, port, &answer, ""));
        tokio::time::sleep(std::time::Duration::from_millis(40)).await;
        moved_during_the_stream |= current(&paths) != first;
    }
    let seen = tokio::time::timeout(TIMEOUT, collected)
        .await
        .expect("the last version applied in time")
        .expect("outcomes");
    agent.shutdown().await.expect("shutdown");

    assert!(
        moved_during_the_stream,
        "a check was made to its end during the stream: {:?}",
        seen.iter()
            .map(|o| (o.generation, &o.summary))
            .collect::<Vec<_>>()
    );
    assert!(
        seen.iter()
            .any(|o| o.summary.contains("left to a newer version")),
        "checks were left to newer versions too"
    );
}

/// An Apply over the controller contract, of a whole version.
fn apply_request(desired: &Desired, expected: u64) -> v1::ApplyRequest {
    let plan = encode(&desired.plan).expect("the plan encodes");
    let mut blobs = vec![v1::Blob {
        digest: digest(&plan),
        content: plan.clone(),
    }];
    let files = desired
        .files
        .iter()
        .map(|(path, file)| {
            blobs.push(v1::Blob {
                digest: digest(&file.content),
                content: file.content.clone(),
            });
            v1::FileEntry {
                path: path.to_string(),
                digest: digest(&file.content),
                kind: file.kind.name().to_string(),
            }
        })
        .collect();
    v1::ApplyRequest {
        epoch: 1,
        expected_generation: expected,
        generation: desired.generation.get(),
        files,
        plan_digest: digest(&plan),
        blobs,
        controller: "a test".to_string(),
        plan_format: PLAN_FORMAT,
        edits: Vec::new(),
    }
}

fn control(handle: &AgentHandle, paths: &AgentPaths) -> ControlService {
    ControlService::new(
        handle.clone(),
        &TreeStore::open(paths.tree()).expect("the tree opens"),
        "3.0".to_string(),
        ControlConfig {
            agent: "hawser-agent".to_string(),
            render_settings: Default::default(),
            epoch_file: paths.run().join("epoch"),
            apply_wait: TIMEOUT,
            peer_check: Arc::new(|_| Ok(())),
        },
    )
}

async fn apply(control: &ControlService, request: v1::ApplyRequest) -> v1::ApplyResponse {
    control
        .apply(tonic::Request::new(request))
        .await
        .expect("an answer")
        .into_inner()
}

#[tokio::test]
async fn an_apply_is_answered_once_its_change_is_live_before_its_check_ends() {
    let (_state, paths, agent) = start().await;
    let handle = agent.handle();
    let control = control(&handle, &paths);
    let port = free_port();
    let held = control.state().desired_generation;
    let first = Generation::new(held + 1);
    let (second, third) = (first.next(), first.next().next());

    let answer = apply(
        &control,
        apply_request(&slow_to_check(&paths, first, port, "old", ""), held),
    )
    .await;
    assert_eq!(answer.result.unwrap().outcome(), v1::Outcome::Reload);

    let answer = apply(
        &control,
        apply_request(&slow_to_check(&paths, second, port, "mid", ""), first.get()),
    )
    .await;
    let result = answer.result.unwrap();
    assert_eq!(result.outcome(), v1::Outcome::Runtime, "{result:?}");
    assert!(result.message.contains("live"), "{result:?}");
    let state = answer.state.unwrap();
    assert_eq!(
        state.applied_generation,
        first.get(),
        "answered before the full check of the second version's tree ended"
    );
    assert!(
        !state.reload_pending,
        "live, not waiting for a reload: {state:?}"
    );
    assert_eq!(get_body(port, "/x").await, "mid");

    // The next push comes at once, and takes that check over.
    let mut outcomes = handle.outcomes();
    let answer = apply(
        &control,
        apply_request(&slow_to_check(&paths, third, port, "new", ""), second.get()),
    )
    .await;
    assert_eq!(answer.result.unwrap().outcome(), v1::Outcome::Runtime);
    expect_left_to_newer(&outcome_of(&mut outcomes, second).await, second);
    assert_eq!(
        outcome_of(&mut outcomes, third).await.kind,
        ApplyKind::Runtime
    );
    assert_eq!(handle.status().borrow().applied_generation, Some(third));
    assert_eq!(get_body(port, "/x").await, "new");
    agent.shutdown().await.expect("shutdown");
}

/// A file nothing loads (the configuration names no crt-list), whose
/// content the runtime decision does not read: a version that changes it
/// is still a runtime change, and writes and syncs it when staged. Large,
/// so that its staging lasts long after it begins, on any disk.
const UNREAD: &str = "certs/unread.crtlist";

fn with_unread_file(mut desired: Desired, content: &[u8]) -> Desired {
    Arc::make_mut(&mut desired.files).insert(UNREAD, FileKind::CrtList, content);
    desired
}

/// Whether a staging directory (a version being written) is in the tree.
fn staging_in(paths: &AgentPaths) -> bool {
    let entries = std::fs::read_dir(paths.tree()).expect("the tree");
    entries
        .flatten()
        .any(|entry| entry.file_name().to_string_lossy().starts_with("staging."))
}

#[tokio::test]
async fn a_newer_version_does_not_wait_for_the_staging_of_a_live_one() {
    let (_state, paths, agent) = start().await;
    let handle = agent.handle();
    let mut outcomes = handle.outcomes();
    let port = free_port();
    let first = handle.next_generation();
    let [second, third] = [first.next(), first.next().next()];
    let unread = |fill: u8| vec![fill; 64 << 20];

    let old = version(&paths, first, port, "old", "");
    handle.submit(with_unread_file(old, &unread(b'a')));
    assert_eq!(outcome(&mut outcomes).await.kind, ApplyKind::Reload);
    let checked = current(&paths);

    // Live at once; its tree, with a new unread file, takes long to write.
    let mid = version(&paths, second, port, "mid", "");
    handle.submit(with_unread_file(mid, &unread(b'b')));
    until_answered(port, "mid").await;
    tokio::time::timeout(TIMEOUT, async {
        while !staging_in(&paths) {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the second version is staged");
    assert_eq!(current(&paths), checked, "its staging has not ended");

    // The third keeps the first's unread file: its own staging is quick.
    let new = version(&paths, third, port, "new", "");
    handle.submit(with_unread_file(new, &unread(b'a')));
    expect_left_to_newer(&outcome_of(&mut outcomes, second).await, second);
    let applied = outcome_of(&mut outcomes, third).await;
    assert_eq!(applied.kind, ApplyKind::Runtime, "{applied:?}");
    assert_eq!(get_body(port, "/x").await, "new");
    assert_eq!(
        current(&paths),
        name_of(third),
        "its checked tree is current"
    );

    // The given-up staging stops on its own and leaves nothing.
    tokio::time::timeout(TIMEOUT, async {
        while staging_in(&paths) {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the given-up staging ends");
    assert!(
        !paths.tree().join(name_of(second)).exists(),
        "the second version's staging was given up, not finished"
    );
    agent.shutdown().await.expect("shutdown");
}
