//! The version the agent holds (the newest accepted by Apply, or the one it
//! serves after a restart), kept by content digest, so an Apply need only
//! carry the files the agent lacks, whole or as edits of held ones
//! (`hawser_proto::blob_edit`). The plan is one more blob, in the
//! contract's wire format (`hawser_plan::PLAN_FORMAT`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use hawser_plan::{
    Decoded, Earlier, FileKind, FileSet, Plan, PlanFormatError, decode_after, digest, encode,
};
use hawser_proto::{MAX_FILE_BYTES, MAX_MESSAGE_BYTES, blob_edit, v1};

/// What the state reports of a held version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldView {
    pub generation: u64,
    pub files: BTreeMap<String, String>,
    pub plan_digest: String,
}

/// One accepted version: its files by path and their contents by digest.
#[derive(Debug, Clone, Default)]
pub struct Held {
    pub generation: u64,
    pub files: BTreeMap<String, String>,
    pub plan_digest: String,
    blobs: HashMap<String, Arc<Vec<u8>>>,
    /// The plan as read from this version's blob and files, which the next
    /// version reads again only where they changed (`None` when this
    /// version was not read from an Apply: a plan the agent served).
    decoded: Option<Decoded>,
}

/// Why an Apply's content cannot be used; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ContentError {
    #[error("the agent lacks {} file(s)", .0.len())]
    Missing(Vec<String>),
    #[error("{0}")]
    Invalid(String),
    /// The plan is in a format this agent does not read.
    #[error(transparent)]
    Format(PlanFormatError),
}

impl Held {
    pub fn view(&self) -> HeldView {
        HeldView {
            generation: self.generation,
            files: self.files.clone(),
            plan_digest: self.plan_digest.clone(),
        }
    }

    pub fn of(generation: u64, files: &FileSet, plan: &Plan) -> Self {
        let mut held = Held {
            generation,
            ..Held::default()
        };
        for (path, file) in files.iter() {
            let d = digest(&file.content);
            held.files.insert(path.to_string(), d.clone());
            held.blobs.insert(d, Arc::new(file.content.clone()));
        }
        let encoded = encode(plan).unwrap_or_default();
        held.plan_digest = digest(&encoded);
        held.blobs
            .insert(held.plan_digest.clone(), Arc::new(encoded));
        held
    }

    /// Builds the requested version from the request's blobs and what is
    /// held; lists every digest neither has. A plan format this agent does
    /// not read is refused first, before anything is asked for.
    pub fn resolve(
        &self,
        request: &v1::ApplyRequest,
    ) -> Result<(FileSet, Arc<Plan>, Held), ContentError> {
        if !hawser_plan::reads_format(request.plan_format) {
            return Err(ContentError::Format(PlanFormatError::Unknown {
                received: request.plan_format,
            }));
        }
        let mut sent: HashMap<&str, &[u8]> = HashMap::new();
        for blob in &request.blobs {
            if digest(&blob.content) != blob.digest {
                return Err(ContentError::Invalid(format!(
                    "blob {} does not match its digest",
                    blob.digest
                )));
            }
            sent.insert(blob.digest.as_str(), blob.content.as_slice());
        }
        let mut missing: Vec<String> = Vec::new();
        let edited = self.made_from_edits(&request.edits, &mut missing)?;
        let lookup = |d: &str| -> Option<Arc<Vec<u8>>> {
            sent.get(d)
                .map(|c| Arc::new(c.to_vec()))
                .or_else(|| edited.get(d).cloned())
                .or_else(|| self.blobs.get(d).cloned())
        };
        let mut next = Held {
            generation: request.generation,
            plan_digest: request.plan_digest.clone(),
            ..Held::default()
        };
        let mut files = FileSet::default();
        for entry in &request.files {
            let kind = FileKind::from_name(&entry.kind).ok_or_else(|| {
                ContentError::Invalid(format!(
                    "{}: unknown file kind {:?}",
                    entry.path, entry.kind
                ))
            })?;
            match lookup(&entry.digest) {
                Some(content) => {
                    files.insert(entry.path.clone(), kind, content.as_slice());
                    next.blobs.insert(entry.digest.clone(), content);
                }
                None if !missing.contains(&entry.digest) => missing.push(entry.digest.clone()),
                None => {}
            }
            next.files.insert(entry.path.clone(), entry.digest.clone());
        }
        let Some(encoded) = lookup(&request.plan_digest) else {
            if !missing.contains(&request.plan_digest) {
                missing.push(request.plan_digest.clone());
            }
            return Err(ContentError::Missing(missing));
        };
        if !missing.is_empty() {
            return Err(ContentError::Missing(missing));
        }
        // Read with the files: its maps' entries are in theirs.
        let earlier = self.decoded.as_ref().and_then(|decoded| {
            let bytes = self.blobs.get(&self.plan_digest)?;
            Some(Earlier { decoded, bytes })
        });
        let unchanged = |path: &str| next.files.get(path) == self.files.get(path);
        let decoded = decode_after(request.plan_format, &encoded, &files, earlier, unchanged)
            .map_err(|e| match e {
                PlanFormatError::Malformed { source, .. } => {
                    ContentError::Invalid(format!("the plan does not parse: {source}"))
                }
                PlanFormatError::MapFile { .. } => ContentError::Invalid(e.to_string()),
                other => ContentError::Format(other),
            })?;
        next.blobs.insert(request.plan_digest.clone(), encoded);
        let plan = Arc::clone(&decoded.plan);
        // Before format 3 the entries came in the plan, unchecked against
        // the files: not what a next version may take for theirs.
        next.decoded = (request.plan_format >= 3).then_some(decoded);
        Ok((files, plan, next))
    }

    /// The content each edit makes of the blob it names as its base;
    /// the digest of an edit whose base is not held goes to `missing` (the
    /// whole blob, then). What the edits make together is bounded as a
    /// message is.
    fn made_from_edits<'r>(
        &self,
        edits: &'r [v1::BlobEdit],
        missing: &mut Vec<String>,
    ) -> Result<HashMap<&'r str, Arc<Vec<u8>>>, ContentError> {
        let mut made: HashMap<&str, Arc<Vec<u8>>> = HashMap::new();
        let mut bytes = 0usize;
        for edit in edits {
            if made.contains_key(edit.digest.as_str()) {
                continue;
            }
            let Some(base) = self.blobs.get(&edit.base) else {
                missing.push(edit.digest.clone());
                continue;
            };
            let invalid = |why: String| {
                ContentError::Invalid(format!("blob {} as an edit: {why}", edit.digest))
            };
            let content = blob_edit::apply(base, edit).map_err(|e| invalid(e.to_string()))?;
            bytes += content.len();
            if content.len() > MAX_FILE_BYTES || bytes > MAX_MESSAGE_BYTES {
                return Err(invalid(format!(
                    "{} bytes, over the limit of {MAX_FILE_BYTES} a file and {MAX_MESSAGE_BYTES} in all",
                    content.len()
                )));
            }
            if digest(&content) != edit.digest {
                return Err(invalid("it does not match its digest".into()));
            }
            made.insert(edit.digest.as_str(), Arc::new(content));
        }
        Ok(made)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    fn request(held: &Held, files: &FileSet, plan: &Plan, with_blobs: bool) -> v1::ApplyRequest {
        let next = Held::of(held.generation + 1, files, plan);
        v1::ApplyRequest {
            epoch: 1,
            expected_generation: held.generation,
            generation: held.generation + 1,
            files: files
                .iter()
                .map(|(path, f)| v1::FileEntry {
                    path: path.to_string(),
                    digest: digest(&f.content),
                    kind: f.kind.name().to_string(),
                })
                .collect(),
            plan_digest: next.plan_digest.clone(),
            blobs: if with_blobs {
                next.blobs
                    .iter()
                    .filter(|(d, _)| !held.blobs.contains_key(*d))
                    .map(|(d, c)| v1::Blob {
                        digest: d.clone(),
                        content: c.to_vec(),
                    })
                    .collect()
            } else {
                Vec::new()
            },
            controller: "test".into(),
            plan_format: hawser_plan::PLAN_FORMAT,
            edits: Vec::new(),
        }
    }

    fn files(map: &str) -> FileSet {
        let mut files = FileSet::default();
        files.insert("haproxy.cfg", FileKind::Config, "global\n");
        files.insert("maps/routes.map", FileKind::Map, map);
        files
    }

    #[test]
    fn a_plans_map_entries_are_read_from_its_files_and_a_missing_one_refuses_it() {
        let routes = hawser_plan::MapPlan::longest_first("maps/routes.map", Vec::new());
        let plan = Plan {
            maps: vec![routes.clone()],
            ..Plan::default()
        };
        let held = Held::of(3, &files("a be_a\n"), &plan);
        let changed = files("b be_b\n");
        let (_, resolved, _) = held
            .resolve(&request(&held, &changed, &plan, true))
            .unwrap();
        let entries: Vec<(&str, &str)> = resolved.maps[0]
            .entries
            .iter()
            .map(|e| (&*e.key, &*e.value))
            .collect();
        assert_eq!(entries, [("b", "be_b")]);

        let elsewhere = Plan {
            maps: vec![hawser_plan::MapPlan {
                path: "maps/elsewhere.map".into(),
                ..routes
            }],
            ..Plan::default()
        };
        let Err(ContentError::Invalid(why)) =
            held.resolve(&request(&held, &changed, &elsewhere, true))
        else {
            panic!("a map without its file must be refused");
        };
        assert!(why.contains("maps/elsewhere.map"), "{why}");
    }

    #[test]
    fn versions_in_a_row_read_as_each_read_alone() {
        let routes = |entries: &[(&str, &str)]| {
            let entries = entries
                .iter()
                .map(|(k, v)| hawser_plan::MapEntry::new(*k, *v))
                .collect();
            hawser_plan::MapPlan::longest_first("maps/routes.map", entries)
        };
        let plan = |structure: &str, entries: &[(&str, &str)]| Plan {
            structure_digest: structure.into(),
            maps: vec![routes(entries)],
            ..Plan::default()
        };
        let versions = [
            (plan("one", &[("a", "be_a")]), files("a be_a\n")),
            // The same plan bytes, another route map.
            (plan("one", &[("b", "be_b")]), files("b be_b\n")),
            // Another plan, the same route map.
            (plan("two", &[("b", "be_b")]), files("b be_b\n")),
            // Back to the first.
            (plan("one", &[("a", "be_a")]), files("a be_a\n")),
        ];
        let mut held = Held::of(1, &FileSet::default(), &Plan::default());
        for (step, (plan, files)) in versions.iter().enumerate() {
            let (resolved_files, resolved, next) =
                held.resolve(&request(&held, files, plan, true)).unwrap();
            assert_eq!(resolved_files, *files, "version {step}");
            assert_eq!(*resolved, *plan, "version {step}");
            held = next;
        }
    }

    #[test]
    fn only_what_changed_is_needed() {
        let plan = Plan::default();
        let held = Held::of(3, &files("a be_a\n"), &plan);
        let changed = files("b be_b\n");
        let Err(ContentError::Missing(missing)) =
            held.resolve(&request(&held, &changed, &plan, false))
        else {
            panic!("expected missing files");
        };
        assert_eq!(missing, vec![digest(b"b be_b\n")]);
        let (resolved, _, next) = held
            .resolve(&request(&held, &changed, &plan, true))
            .unwrap();
        assert_eq!(resolved, changed);
        assert_eq!(next.generation, 4);
    }

    /// A request for `changed` whose blob of `maps/routes.map` travels as
    /// an edit of the map `held` holds.
    fn with_map_edit(held: &Held, changed: &FileSet, plan: &Plan) -> v1::ApplyRequest {
        let mut req = request(held, changed, plan, true);
        let base_digest = &held.files["maps/routes.map"];
        let next = changed.get("maps/routes.map").unwrap();
        let next_digest = digest(&next.content);
        req.blobs.retain(|b| b.digest != next_digest);
        req.edits.push(
            blob_edit::edit_of(
                &held.blobs[base_digest],
                &next.content,
                &next_digest,
                base_digest,
            )
            .unwrap(),
        );
        req
    }

    const MAP: &str = "a be_a\nb be_b\nc be_c\nd be_d\n";

    #[test]
    fn a_blob_sent_as_an_edit_of_a_held_one_is_read_as_sent_whole() {
        let plan = Plan::default();
        let held = Held::of(3, &files(MAP), &plan);
        let changed = files(&MAP.replace("c be_c\n", "c be_c\ncc be_cc\n"));
        let req = with_map_edit(&held, &changed, &plan);
        assert!(req.blobs.iter().all(|b| b.content.len() < MAP.len()));
        assert_eq!(req.edits[0].inserted, b"cc be_cc\n");
        let (resolved, _, next) = held.resolve(&req).unwrap();
        assert_eq!(resolved, changed);
        // The next version may build on it in turn.
        let again = files(MAP);
        let (resolved, _, _) = next.resolve(&with_map_edit(&next, &again, &plan)).unwrap();
        assert_eq!(resolved, again);
    }

    #[test]
    fn an_edit_of_a_blob_not_held_asks_for_the_whole_blob() {
        let plan = Plan::default();
        let held = Held::of(3, &files(MAP), &plan);
        let changed = files(&MAP.replace("b be_b", "b be_other"));
        let mut req = with_map_edit(&held, &changed, &plan);
        req.edits[0].base = digest(b"a map the agent never had\n");
        let Err(ContentError::Missing(missing)) = held.resolve(&req) else {
            panic!("expected the edited blob asked for");
        };
        assert_eq!(missing, vec![req.edits[0].digest.clone()]);
    }

    #[test]
    fn an_edit_that_makes_other_content_than_its_digest_is_refused() {
        let plan = Plan::default();
        let held = Held::of(3, &files(MAP), &plan);
        let changed = files(&MAP.replace("b be_b", "b be_other"));
        let mut tampered = with_map_edit(&held, &changed, &plan);
        tampered.edits[0].inserted = b"b be_evil\n".to_vec();
        let Err(ContentError::Invalid(why)) = held.resolve(&tampered) else {
            panic!("a tampered edit must be refused");
        };
        assert!(why.contains("does not match its digest"), "{why}");

        let mut beyond = with_map_edit(&held, &changed, &plan);
        beyond.edits[0].kept_lines = 40;
        let Err(ContentError::Invalid(why)) = held.resolve(&beyond) else {
            panic!("an edit beyond its base must be refused");
        };
        assert!(why.contains("lines of a base of 4"), "{why}");
    }

    #[test]
    fn a_blob_that_lies_about_its_digest_is_refused() {
        let plan = Plan::default();
        let held = Held::of(1, &files("a\n"), &plan);
        let mut req = request(&held, &files("b\n"), &plan, true);
        req.blobs[0].content = b"tampered".to_vec();
        assert!(matches!(held.resolve(&req), Err(ContentError::Invalid(_))));
    }

    #[test]
    fn the_current_plan_format_round_trips() {
        let plan = Plan {
            structure_digest: "abc".into(),
            ..Plan::default()
        };
        let held = Held::of(1, &files("a\n"), &Plan::default());
        let (_, resolved, next) = held
            .resolve(&request(&held, &files("a\n"), &plan, true))
            .unwrap();
        assert_eq!(*resolved, plan);
        assert_eq!(next.plan_digest, digest(&encode(&plan).unwrap()));
    }

    #[test]
    fn an_unknown_plan_format_is_refused_naming_both_formats() {
        let plan = Plan::default();
        let held = Held::of(1, &files("a\n"), &plan);
        let mut req = request(&held, &files("b\n"), &plan, true);
        req.plan_format = hawser_plan::PLAN_FORMAT + 1;
        let Err(ContentError::Format(error)) = held.resolve(&req) else {
            panic!("an unknown format must be refused");
        };
        assert_eq!(
            error.to_string(),
            format!(
                "plan format {} is not one this agent reads (it reads formats up to {}); \
                 run an agent as new as the controller",
                hawser_plan::PLAN_FORMAT + 1,
                hawser_plan::PLAN_FORMAT
            )
        );
    }
}
