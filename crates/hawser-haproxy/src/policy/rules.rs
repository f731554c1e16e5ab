//! The verdict on one tokenized line: the keyword tables of `keywords.rs`
//! applied to the words HAProxy will act on.

use super::error::Reason;
use super::keywords as kw;
use super::tokenize::{Line, Word};
use super::{ConfigPolicy, TreeFiles};

/// The longest path or address quoted in a reason.
const MAX_PATH: usize = 80;

/// The first reason `line` is refused, if any.
pub(crate) fn judge(
    policy: &ConfigPolicy,
    line: &Line<'_>,
    tree: &dyn TreeFiles,
) -> Option<Reason> {
    if let Some(fault) = line.fault {
        return Some(Reason::Malformed(fault.describe()));
    }
    if let Some(word) = line.words.iter().find(|w| w.expands_environment) {
        return Some(Reason::Environment {
            what: format!("`{}` expands a variable", short(&word.text())),
        });
    }
    let words: Vec<String> = line.words.iter().map(Word::text).collect();
    // An empty first word makes HAProxy skip the line; judge the rest anyway.
    // `no` and `default` prefix a keyword without changing what it names.
    let mut start = 0;
    while words
        .get(start)
        .is_some_and(|w| w.is_empty() || matches!(lower(w).as_str(), "no" | "default"))
    {
        start += 1;
    }
    let words = &words[start..];
    let keyword = lower(words.first()?);
    keyword_reason(policy, &keyword, words, tree)
        .or_else(|| words.iter().find_map(|w| function_reason(&keyword, w)))
        .or_else(|| option_reason(policy, &keyword, words))
        .or_else(|| address_reason(policy, &keyword, words))
}

/// What the first word (and, for `option` and `stats`, the second) does.
fn keyword_reason(
    policy: &ConfigPolicy,
    keyword: &str,
    words: &[String],
    tree: &dyn TreeFiles,
) -> Option<Reason> {
    let second = words.get(1).map(|w| lower(w)).unwrap_or_default();
    if kw::LUA_LOADERS.contains(&keyword) {
        return lua_reason(policy, keyword, words.get(1).map(String::as_str), tree);
    }
    if kw::CODE_LOADERS.contains(&keyword)
        || keyword.starts_with(kw::LUA_PREFIX)
        || (keyword == "option" && kw::CODE_OPTIONS.contains(&second.as_str()))
    {
        let keyword = if keyword == "option" {
            format!("option {second}")
        } else {
            keyword.to_string()
        };
        return Some(Reason::CodeLoader { keyword });
    }
    if kw::ENVIRONMENT_KEYWORDS.contains(&keyword) {
        return Some(Reason::Environment {
            what: format!("`{keyword}`"),
        });
    }
    if kw::HOST_READERS.contains(&keyword) {
        return Some(Reason::OutsideTree {
            keyword: keyword.to_string(),
            path: "a file of the host".to_string(),
        });
    }
    if keyword == kw::DEFAULT_PATH && !kw::DEFAULT_PATH_IN_TREE.contains(&second.as_str()) {
        return Some(Reason::OutsideTree {
            keyword: keyword.to_string(),
            path: short(words.get(1..).unwrap_or_default().join(" ").as_str()),
        });
    }
    if kw::CONDITIONS.contains(&keyword) {
        let reads = words[1..].iter().any(|w| {
            functions(w).any(|(name, _)| kw::ENVIRONMENT_PREDICATES.contains(&name.as_str()))
        });
        if reads {
            return Some(Reason::Environment {
                what: format!("`{keyword}` tests a variable"),
            });
        }
    }
    kw::FILE_KEYWORDS
        .iter()
        .filter(|(name, _)| *name == keyword)
        .find_map(|(_, at)| {
            let path = words.get(*at)?;
            file_reason(policy, keyword, path)
        })
}

/// `lua-load <file>`: the built-in Lua, in the tree, by its digest.
fn lua_reason(
    policy: &ConfigPolicy,
    keyword: &str,
    path: Option<&str>,
    tree: &dyn TreeFiles,
) -> Option<Reason> {
    let path = path.unwrap_or_default();
    let foreign = || Reason::ForeignLua {
        keyword: keyword.to_string(),
        path: short(path),
    };
    let Some(relative) = in_tree(path) else {
        return Some(foreign());
    };
    match tree.read(&relative) {
        Some(content) if policy.is_builtin_lua(&content) => None,
        _ => Some(foreign()),
    }
}

/// `map*(<file>)`, `set-map(<file>)`, `env(<name>)` ... inside any word.
fn function_reason(keyword: &str, word: &str) -> Option<Reason> {
    functions(word).find_map(|(name, argument)| {
        if kw::ENVIRONMENT_FETCHES.contains(&name.as_str()) {
            return Some(Reason::Environment {
                what: format!("`{name}(...)` reads a variable"),
            });
        }
        let takes_file = kw::FILE_FUNCTIONS.contains(&name.as_str())
            || name.starts_with(kw::MAP_FUNCTION_PREFIX);
        if !takes_file {
            return None;
        }
        // HAProxy's argument parser unquotes and unescapes again.
        if argument.contains(['"', '\'', '\\']) {
            return Some(Reason::ObscuredFile { function: name });
        }
        let file = argument.split([',', ')']).next().unwrap_or_default();
        in_tree(file).is_none().then(|| Reason::OutsideTree {
            keyword: format!("{name}() in {keyword}"),
            path: short(file),
        })
    })
}

/// Every `name(` in `word`, with the text after the parenthesis.
fn functions(word: &str) -> impl Iterator<Item = (String, &str)> {
    word.match_indices('(').map(move |(at, _)| {
        let before = &word[..at];
        let start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "_.-".contains(c)))
            .map_or(0, |i| i + 1);
        (lower(&before[start..]), &word[at + 1..])
    })
}

/// `crt <file>`, `file <file>`, `-f <file>` ... anywhere on the line.
pub(crate) fn option_reason(
    policy: &ConfigPolicy,
    keyword: &str,
    words: &[String],
) -> Option<Reason> {
    words.windows(2).find_map(|pair| {
        let option = lower(&pair[0]);
        if kw::HOST_READING_OPTIONS.contains(&option.as_str()) {
            return Some(Reason::OutsideTree {
                keyword: option,
                path: "a file of the host".to_string(),
            });
        }
        let scoped = kw::SCOPED_FILE_OPTIONS.contains(&(keyword, option.as_str()));
        if kw::FILE_OPTIONS.contains(&option.as_str()) || scoped {
            file_reason(policy, &option, &pair[1])
        } else {
            None
        }
    })
}

/// Addresses at their keyword's position, and any word with a socket prefix.
fn address_reason(policy: &ConfigPolicy, keyword: &str, words: &[String]) -> Option<Reason> {
    let second = words.get(1).map(|w| lower(w));
    let positioned = kw::ADDRESS_KEYWORDS
        .iter()
        .filter(|(name, sub, _)| {
            *name == keyword && sub.is_none_or(|s| Some(s) == second.as_deref())
        })
        .filter_map(|(_, _, at)| words.get(*at))
        .flat_map(|w| w.split(','))
        .find_map(|address| socket_reason(policy, keyword, address, true));
    positioned.or_else(|| {
        words
            .iter()
            .find_map(|w| socket_reason(policy, keyword, w, false))
    })
}

/// `address` as a socket: prefixed forms anywhere; a bare `/path` only at an
/// address position (elsewhere it is a URL path or a pattern).
fn socket_reason(
    policy: &ConfigPolicy,
    keyword: &str,
    address: &str,
    at_address: bool,
) -> Option<Reason> {
    let folded = lower(address);
    let foreign = || Reason::ForeignSocket {
        keyword: keyword.to_string(),
        address: short(address),
    };
    let prefixed = |list: &[&str]| list.iter().any(|p| folded.starts_with(p));
    if keyword == "log" && kw::LOG_STDIO.contains(&folded.as_str()) {
        return None;
    }
    if prefixed(kw::DESCRIPTOR_PREFIXES) || prefixed(kw::ABSTRACT_PREFIXES) {
        return Some(foreign());
    }
    let path = match kw::UNIX_PREFIXES.iter().find(|p| folded.starts_with(*p)) {
        Some(prefix) => &address[prefix.len()..],
        None if at_address && address.starts_with('/') => address,
        None => return None,
    };
    if policy.is_hawser_socket(path) || (!path.starts_with('/') && in_tree(path).is_some()) {
        None
    } else {
        Some(foreign())
    }
}

/// A file argument: one of hawser's own files, or a path in the tree.
pub(crate) fn file_reason(policy: &ConfigPolicy, keyword: &str, path: &str) -> Option<Reason> {
    if policy.is_hawser_file(path) || in_tree(path).is_some() {
        return None;
    }
    Some(Reason::OutsideTree {
        keyword: keyword.to_string(),
        path: short(path),
    })
}

/// `path` normalized inside the tree, or `None` when it is absolute, starts
/// with `~`, names an address (`x@`), or climbs out with `..`.
pub(crate) fn in_tree(path: &str) -> Option<String> {
    if path.starts_with(['/', '~']) || path.contains('@') || path.contains('\0') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

pub(crate) fn lower(word: &str) -> String {
    word.to_ascii_lowercase()
}

/// `text` cut to [`MAX_PATH`] characters.
fn short(text: &str) -> String {
    let mut cut: String = text.chars().take(MAX_PATH).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}
