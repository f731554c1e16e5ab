//! Load spreading: a Service's endpoints from all its EndpointSlices are
//! servers of one backend, and requests reach every pod (fixture
//! `load_spread/`).

use crate::support;

use std::collections::BTreeMap;

use hawser_echo::POD_HEADER;
use support::pod;

const REQUESTS: usize = 30;

#[tokio::test]
async fn requests_reach_every_pod_of_a_service_across_endpoint_slices() {
    let ingress = support::serve(
        "load_spread",
        &[
            pod("spread", "spread", "spread-a"),
            pod("spread", "spread", "spread-b"),
            pod("spread", "spread", "spread-c"),
        ],
    )
    .await;
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..REQUESTS {
        let target = format!("/request/{i}");
        let response = ingress.get("spread.example.com", &target).await;
        assert_eq!(response.status, 200, "{target}: {:?}", response.text());
        let reply = response.echo();
        assert_eq!(reply.service, "spread");
        assert_eq!(reply.path, target);
        assert_eq!(response.header(POD_HEADER), Some(reply.pod.as_str()));
        *answers.entry(reply.pod).or_default() += 1;
    }
    let pods: Vec<&str> = answers.keys().map(String::as_str).collect();
    assert_eq!(
        pods,
        ["spread-a", "spread-b", "spread-c"],
        "{REQUESTS} requests should reach all three pods; answers per pod: {answers:?}"
    );
}
