//! The crt-lists a configuration names: each of their lines carries a
//! certificate path and may carry bind options (`[ca-file ...]`), which
//! HAProxy opens like the configuration's own. Judged with the same rules,
//! read with the configuration tokenizer once the brackets are set apart
//! (stricter than HAProxy's own crt-list reader, never looser).

use super::error::Reason;
use super::keywords as kw;
use super::rules::{file_reason, in_tree, lower, option_reason};
use super::tokenize::{Line, Word, lines};
use super::{ConfigPolicy, TreeFiles};

/// The first reason a crt-list named on `line` is refused, with the
/// crt-list line it is about.
pub(crate) fn judge(
    policy: &ConfigPolicy,
    line: &Line<'_>,
    tree: &dyn TreeFiles,
) -> Option<Reason> {
    let words: Vec<String> = line.words.iter().map(Word::text).collect();
    words
        .windows(2)
        .filter(|pair| lower(&pair[0]) == kw::CRT_LIST)
        .filter_map(|pair| in_tree(&pair[1]))
        .find_map(|path| {
            let content = tree.read(&path)?;
            judge_list(policy, &path, &content)
        })
}

fn judge_list(policy: &ConfigPolicy, path: &str, content: &[u8]) -> Option<Reason> {
    let spaced: Vec<u8> = content
        .iter()
        .flat_map(|b| match b {
            b'[' | b']' => [b' ', *b, b' '].to_vec(),
            _ => vec![*b],
        })
        .collect();
    lines(&spaced).find_map(|entry| {
        let within = |reason: Reason| match reason {
            Reason::OutsideTree {
                keyword,
                path: named,
            } => Reason::OutsideTree {
                keyword: format!("{keyword} in {path} line {}", entry.number),
                path: named,
            },
            other => other,
        };
        if let Some(fault) = entry.fault {
            return Some(Reason::Malformed(fault.describe()));
        }
        if entry.words.iter().any(|w| w.expands_environment) {
            return Some(Reason::Environment {
                what: format!("{path} line {}", entry.number),
            });
        }
        let words: Vec<String> = entry.words.iter().map(Word::text).collect();
        let certificate = words.first()?;
        file_reason(policy, kw::CRT_LIST, certificate)
            .or_else(|| option_reason(policy, kw::CRT_LIST, &words))
            .map(within)
    })
}
