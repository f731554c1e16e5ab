//! Validation tests (`spec.tests`, and `tests:` in a local config file): a
//! request, and what the rendered configuration must answer to it.
//!
//! ```text
//!  ValidationTest { name, request { host, path, method, headers }, expect { status, service } }
//!        │ validate_tests: names unique, request sendable, something expected
//!        ▼
//!  the controller's runner sends the request to a private HAProxy on the render
//! ```
//!
//! The types stay permissive for serde (every field defaulted, as the API
//! server keeps them); [`validate_tests`] then names the first test and field
//! that cannot be run.

use std::collections::{BTreeMap, BTreeSet};

use hawser_render::validate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One request and what the rendered configuration must answer.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct ValidationTest {
    /// Unique among the tests; named in reports and in the `Valid` condition.
    pub name: String,
    pub request: TestRequest,
    pub expect: TestExpectation,
}

/// A plain HTTP request sent to the rendered configuration's HTTP port.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct TestRequest {
    /// The `Host` header, e.g. `shop.example.com`.
    pub host: String,
    /// Path and optional query, starting with `/`; `/` when empty.
    pub path: String,
    /// GET when empty.
    pub method: String,
    /// Further request headers (not `Host`: that is `host`).
    pub headers: BTreeMap<String, String>,
}

/// What must come back; at least one of the two.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(default, rename_all = "camelCase")]
pub struct TestExpectation {
    /// The HTTP status code, e.g. 200, or 404 for a request no route matches.
    pub status: Option<u16>,
    /// `namespace/name` of the Service that must answer.
    pub service: Option<String>,
}

/// Why a test cannot be run as written; names the test and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tests[{index}] ({name:?}): {field}: {reason}")]
pub struct InvalidTest {
    /// Position in the list, from 0.
    pub index: usize,
    pub name: String,
    /// The field at fault, e.g. `request.path`.
    pub field: &'static str,
    pub reason: String,
}

impl TestRequest {
    /// The method to send: the one given, or GET.
    pub fn method_or_default(&self) -> &str {
        if self.method.is_empty() {
            "GET"
        } else {
            &self.method
        }
    }

    /// The request target to send: the path given, or `/`.
    pub fn path_or_default(&self) -> &str {
        if self.path.is_empty() {
            "/"
        } else {
            &self.path
        }
    }
}

impl TestExpectation {
    /// The expected Service as (namespace, name), when one is expected and
    /// well formed.
    pub fn service_key(&self) -> Option<(&str, &str)> {
        self.service.as_deref()?.split_once('/')
    }
}

/// Checks every test; the first problem found is returned.
pub fn validate_tests(tests: &[ValidationTest]) -> Result<(), InvalidTest> {
    let mut names = BTreeSet::new();
    for (index, test) in tests.iter().enumerate() {
        let invalid = |field: &'static str, reason: String| InvalidTest {
            index,
            name: test.name.clone(),
            field,
            reason,
        };
        if test.name.trim().is_empty() || test.name.chars().any(char::is_control) {
            return Err(invalid(
                "name",
                "every test needs a name of one line".to_string(),
            ));
        }
        if !names.insert(test.name.as_str()) {
            return Err(invalid("name", "another test has this name".to_string()));
        }
        check_request(&test.request).map_err(|(field, reason)| invalid(field, reason))?;
        check_expectation(&test.expect).map_err(|(field, reason)| invalid(field, reason))?;
    }
    Ok(())
}

fn check_request(request: &TestRequest) -> Result<(), (&'static str, String)> {
    let host = &request.host;
    if host.is_empty() || !host.bytes().all(|b| b.is_ascii_graphic()) {
        return Err((
            "request.host",
            format!("{host:?} must be a host name, e.g. shop.example.com"),
        ));
    }
    let path = request.path_or_default();
    if !path.starts_with('/') || !path.bytes().all(|b| b.is_ascii_graphic() && b != b'#') {
        return Err((
            "request.path",
            format!(
                "{path:?} must start with '/' and hold no space, '#' or non-ASCII character (percent-encode them)"
            ),
        ));
    }
    let method = request.method_or_default();
    if !is_token(method) {
        return Err((
            "request.method",
            format!("{method:?} is not an HTTP method, e.g. GET"),
        ));
    }
    for (name, value) in &request.headers {
        if !is_token(name) {
            return Err(("request.headers", format!("{name:?} is not a header name")));
        }
        if name.eq_ignore_ascii_case("host") {
            return Err((
                "request.headers",
                "set the Host header with request.host".to_string(),
            ));
        }
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err((
                "request.headers",
                format!("the value of {name} must be one line"),
            ));
        }
    }
    Ok(())
}

fn check_expectation(expect: &TestExpectation) -> Result<(), (&'static str, String)> {
    if expect.status.is_none() && expect.service.is_none() {
        return Err((
            "expect",
            "state a status, a service (namespace/name), or both".to_string(),
        ));
    }
    if let Some(status) = expect.status
        && !(100..=599).contains(&status)
    {
        return Err((
            "expect.status",
            format!("{status} is not an HTTP status code (100 to 599)"),
        ));
    }
    if let Some(service) = &expect.service {
        let well_formed = expect.service_key().is_some_and(|(namespace, name)| {
            validate::label_name("namespace", namespace).is_ok()
                && validate::label_name("name", name).is_ok()
        });
        if !well_formed {
            return Err((
                "expect.service",
                format!("{service:?} is not namespace/name of a Service"),
            ));
        }
    }
    Ok(())
}

/// An RFC 9110 token: what method and header names are made of.
fn is_token(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
    use super::*;

    fn test(name: &str, host: &str, path: &str) -> ValidationTest {
        ValidationTest {
            name: name.to_string(),
            request: TestRequest {
                host: host.to_string(),
                path: path.to_string(),
                ..TestRequest::default()
            },
            expect: TestExpectation {
                status: Some(200),
                service: Some("app/web".to_string()),
            },
        }
    }

    #[test]
    fn a_plain_test_is_valid_and_defaults_method_and_path() {
        let tests = [test("web", "web.example.com", "")];
        validate_tests(&tests).unwrap();
        assert_eq!(tests[0].request.method_or_default(), "GET");
        assert_eq!(tests[0].request.path_or_default(), "/");
        let with_query = [test("q", "web.example.com", "/search?q=a%20b")];
        validate_tests(&with_query).unwrap();
    }

    #[test]
    fn problems_name_the_test_and_the_field() {
        let mut no_expectation = test("bare", "a.example.com", "/");
        no_expectation.expect = TestExpectation::default();
        let mut host_header = test("hdr", "a.example.com", "/");
        host_header
            .request
            .headers
            .insert("Host".to_string(), "b".to_string());
        let mut bad_service = test("svc", "a.example.com", "/");
        bad_service.expect.service = Some("web".to_string());
        let mut bad_status = test("status", "a.example.com", "/");
        bad_status.expect.status = Some(42);
        let mut bad_method = test("method", "a.example.com", "/");
        bad_method.request.method = "GE T".to_string();
        for (tests, field) in [
            (vec![test("", "a.example.com", "/")], "name"),
            (
                vec![test("a", "a.example.com", "/"), test("a", "b", "/")],
                "name",
            ),
            (vec![test("nohost", "", "/")], "request.host"),
            (vec![test("path", "a.example.com", "nope")], "request.path"),
            (vec![test("space", "a.example.com", "/a b")], "request.path"),
            (vec![bad_method], "request.method"),
            (vec![host_header], "request.headers"),
            (vec![no_expectation], "expect"),
            (vec![bad_status], "expect.status"),
            (vec![bad_service], "expect.service"),
        ] {
            let error = validate_tests(&tests).unwrap_err();
            assert_eq!(error.field, field, "{error}");
            assert_eq!(error.index, tests.len() - 1, "{error}");
            assert!(error.to_string().contains(field), "{error}");
        }
    }
}
