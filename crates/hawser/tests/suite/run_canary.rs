//! Canary Ingresses share another Ingress's route as ingress-nginx's do: by
//! header (`always` / `never`, or a value of their own), then by cookie,
//! then by weight; a new weight is a map change, served by the same worker
//! (fixture `run_canary/`).

use crate::support::{Backends, Manifests, Request, Run, pod};

/// Which Service answers `request`.
async fn answered(run: &Run, request: Request) -> String {
    let reply = run.request(&request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.echo().service
}

/// How many of `n` plain requests to `host` the canary answers.
async fn canary_share(run: &Run, host: &str, n: usize) -> usize {
    let mut next = 0;
    for _ in 0..n {
        if answered(run, Request::get(host, "/")).await == "next" {
            next += 1;
        }
    }
    next
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_takes_its_share_by_header_cookie_and_weight() {
    let backends = Backends::start(&[
        pod("shop", "stable", "stable-0"),
        pod("shop", "next", "next-0"),
    ]);
    let manifests = Manifests::from_fixture("run_canary", &backends.vars());
    let run = Run::start(manifests.path()).await;
    run.wait_converged().await;
    let shop = |header: Option<(&str, &str)>| {
        let request = Request::get("shop.example.com", "/");
        match header {
            Some((name, value)) => request.header(name, value),
            None => request,
        }
    };

    assert_eq!(
        answered(&run, shop(Some(("X-Canary", "always")))).await,
        "next"
    );
    assert_eq!(
        answered(&run, shop(Some(("Cookie", "canary=always")))).await,
        "next"
    );
    for _ in 0..10 {
        // never wins over the cookie and the weight.
        let request = shop(Some(("X-Canary", "never"))).header("Cookie", "canary=always");
        assert_eq!(answered(&run, request).await, "stable");
        assert_eq!(
            answered(&run, shop(Some(("Cookie", "canary=never")))).await,
            "stable"
        );
    }
    let share = canary_share(&run, "shop.example.com", 200).await;
    assert!(
        (30..=90).contains(&share),
        "30 in 100 of 200 requests: {share}"
    );

    // A header value of its own; other values fall through (weight 0).
    let beta = |version: &str| Request::get("beta.example.com", "/").header("X-Version", version);
    assert_eq!(answered(&run, beta("v2")).await, "next");
    assert_eq!(answered(&run, beta("v1")).await, "stable");
    assert_eq!(canary_share(&run, "beta.example.com", 20).await, 0);

    let status = run.status().await.to_string();
    assert!(
        status.contains("route \\\"nowhere.example.com/\\\" is served by no other Ingress"),
        "{status}"
    );

    // Argo Rollouts moves the weight: a map change, the same worker.
    let workers = run.worker_pids().await;
    let before = run.desired_generation().await;
    let canaries = std::fs::read_to_string(manifests.path().join("canaries.yaml")).unwrap();
    run.write_manifest(
        "canaries.yaml",
        &canaries.replace("canary-weight: \"30\"", "canary-weight: \"100\""),
    );
    run.expect_outcome_after(before, "runtime").await;
    assert_eq!(canary_share(&run, "shop.example.com", 20).await, 20);
    assert_eq!(run.worker_pids().await, workers);
}
