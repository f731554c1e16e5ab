//! Label and field selectors, as list and watch requests carry them.
//!
//! Labels: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x,y)`, `a`, `!a`,
//! joined by commas (all must hold). Fields: `path=value`, `path==value`,
//! `path!=value` over any dotted path of the object (`metadata.name`, `type`,
//! `status.phase`); a missing field reads as the empty string. The real API
//! server accepts only a few fields per kind; the fake accepts any.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; the empty one matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    pub fn parse(text: &str) -> Result<LabelSelector, String> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(term)?);
        }
        Ok(LabelSelector(requirements))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, set) => labels.get(k).is_some_and(|v| set.contains(v)),
            Requirement::NotIn(k, set) => labels.get(k).is_none_or(|v| !set.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
    }
}

/// Splits on commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
}

fn parse_requirement(term: &str) -> Result<Requirement, String> {
    let invalid = || format!("unable to parse requirement: {term:?}");
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::NotExists(label_key(key.trim(), term)?));
    }
    if let Some((key, value)) = term.split_once("!=") {
        return Ok(Requirement::NotEquals(
            label_key(key.trim(), term)?,
            value.trim().to_string(),
        ));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Requirement::Equals(
            label_key(key.trim(), term)?,
            value.trim().to_string(),
        ));
    }
    let words: Vec<&str> = term.splitn(2, char::is_whitespace).collect();
    match words.as_slice() {
        [key] => Ok(Requirement::Exists(label_key(key, term)?)),
        [key, rest] => {
            let rest = rest.trim_start();
            let (op, set) = if let Some(set) = rest.strip_prefix("notin") {
                ("notin", set)
            } else if let Some(set) = rest.strip_prefix("in") {
                ("in", set)
            } else {
                return Err(invalid());
            };
            let set = set
                .trim()
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .ok_or_else(invalid)?;
            let values = set
                .split(',')
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .collect();
            let key = label_key(key, term)?;
            Ok(if op == "in" {
                Requirement::In(key, values)
            } else {
                Requirement::NotIn(key, values)
            })
        }
        _ => Err(invalid()),
    }
}

fn label_key(key: &str, term: &str) -> Result<String, String> {
    if key.is_empty() || key.contains(char::is_whitespace) || key.contains(['(', ')']) {
        return Err(format!("unable to parse requirement: {term:?}"));
    }
    Ok(key.to_string())
}

/// A parsed field selector; the empty one matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector(Vec<(Vec<String>, bool, String)>);

impl FieldSelector {
    pub fn parse(text: &str) -> Result<FieldSelector, String> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (path, equal, value) = if let Some((p, v)) = term.split_once("!=") {
                (p, false, v)
            } else if let Some((p, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (p, true, v)
            } else {
                return Err(format!("invalid field selector: {term:?}"));
            };
            let path: Vec<String> = path.trim().split('.').map(str::to_string).collect();
            if path.iter().any(String::is_empty) {
                return Err(format!("invalid field selector: {term:?}"));
            }
            terms.push((path, equal, value.trim().to_string()));
        }
        Ok(FieldSelector(terms))
    }

    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, equal, value)| {
            let found = path
                .iter()
                .try_fold(object, |v, segment| v.get(segment))
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                })
                .unwrap_or_default();
            (found == *value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_requirements() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app=web,tier=back", false),
            ("tier in (front, back)", true),
            ("tier notin (front)", false),
            ("missing notin (x)", true),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("app in (api),tier", false),
        ];
        for (selector, expected) in cases {
            let parsed = LabelSelector::parse(selector).unwrap();
            assert_eq!(parsed.matches(&l), expected, "{selector}");
        }
        assert!(LabelSelector::parse("tier in front").is_err());
        assert!(LabelSelector::parse("a b").is_err());
    }

    #[test]
    fn field_requirements() {
        let object = json!({"metadata": {"name": "tls"}, "type": "kubernetes.io/tls"});
        let matches = |s: &str| FieldSelector::parse(s).unwrap().matches(&object);
        assert!(matches("metadata.name=tls"));
        assert!(matches("type==kubernetes.io/tls,metadata.name!=other"));
        assert!(!matches("metadata.namespace=app"));
        assert!(matches("metadata.namespace="));
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
