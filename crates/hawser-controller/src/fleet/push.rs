//! One Apply exchange: send the files the agent lacks; if it names more,
//! send those once.

use std::collections::HashSet;
use std::time::Duration;

use hawser_proto::v1;
use hawser_proto::v1::agent_client::AgentClient;
use tonic::transport::Channel;

use super::build::Built;

/// How long one Apply may take (a paced, verified reload included).
pub const APPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// What travelled: blobs that are files, and their bytes (the plan excluded).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub files: u64,
    pub bytes: u64,
}

pub async fn push(
    client: &mut AgentClient<Channel>,
    state: &v1::State,
    built: &Built,
    epoch: u64,
    controller: &str,
) -> Result<(v1::ApplyResponse, Sent), tonic::Status> {
    let have: HashSet<&String> = state
        .files
        .values()
        .chain(std::iter::once(&state.plan_digest))
        .collect();
    let mut wanted: Vec<String> = built
        .digests()
        .filter(|d| !have.contains(d))
        .cloned()
        .collect();
    wanted.sort();
    let file_digests: HashSet<&String> = built.files.iter().map(|f| &f.digest).collect();
    let mut sent = Sent::default();
    for attempt in 0..2 {
        let blobs: Vec<v1::Blob> = wanted
            .iter()
            .filter_map(|d| {
                built.blob(d).map(|content| v1::Blob {
                    digest: d.clone(),
                    content: content.to_vec(),
                })
            })
            .collect();
        for blob in blobs.iter().filter(|b| file_digests.contains(&b.digest)) {
            sent.files += 1;
            sent.bytes += blob.content.len() as u64;
        }
        let mut request = tonic::Request::new(v1::ApplyRequest {
            epoch,
            expected_generation: state.desired_generation,
            generation: built.generation.max(state.desired_generation + 1),
            files: built.files.clone(),
            plan_digest: built.plan_digest.clone(),
            plan_format: built.plan_format,
            blobs,
            controller: controller.to_string(),
        });
        request.set_timeout(APPLY_TIMEOUT);
        let response = client.apply(request).await?.into_inner();
        let need_files = response
            .result
            .as_ref()
            .is_some_and(|r| r.outcome() == v1::Outcome::NeedFiles);
        if need_files && attempt == 0 {
            wanted = response.missing_digests.clone();
            continue;
        }
        return Ok((response, sent));
    }
    Err(tonic::Status::internal("the agent kept asking for files"))
}
