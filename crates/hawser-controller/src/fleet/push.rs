//! One Apply exchange: send the files the agent lacks, a changed one as
//! an edit of the one it holds at the same path (`hawser_proto::blob_edit`);
//! if it names more, send those whole, once.

use std::collections::HashSet;
use std::time::Duration;

use hawser_proto::v1;
use hawser_proto::v1::agent_client::AgentClient;
use tonic::transport::Channel;

use super::build::Built;

/// How long one Apply may take (a paced, verified reload included).
pub const APPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// What travelled: files, whole or as edits, and their bytes (an edit's
/// inserted lines; the plan excluded).
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
        let mut blobs = Vec::new();
        let mut edits = Vec::new();
        for d in &wanted {
            // An agent that lacks an edit's base asks for the whole blob,
            // which the second attempt sends.
            if let Some(edit) = (attempt == 0)
                .then(|| edit_of_held(built, state, d))
                .flatten()
            {
                sent.files += 1;
                sent.bytes += edit.inserted.len() as u64;
                edits.push(edit);
            } else if let Some(content) = built.blob(d) {
                if file_digests.contains(d) {
                    sent.files += 1;
                    sent.bytes += content.len() as u64;
                }
                blobs.push(v1::Blob {
                    digest: d.clone(),
                    content: content.to_vec(),
                });
            }
        }
        let mut request = tonic::Request::new(v1::ApplyRequest {
            epoch,
            expected_generation: state.desired_generation,
            generation: built.generation.max(state.desired_generation + 1),
            files: built.files.clone(),
            plan_digest: built.plan_digest.clone(),
            plan_format: built.plan_format,
            blobs,
            edits,
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

/// The file named `digest` as an edit of the one the agent holds at its
/// path, when the render before had that one and the edit is small.
fn edit_of_held(built: &Built, state: &v1::State, digest: &str) -> Option<v1::BlobEdit> {
    built
        .files
        .iter()
        .filter(|f| f.digest == digest)
        .find_map(|f| built.edit(digest, state.files.get(&f.path)?))
}
