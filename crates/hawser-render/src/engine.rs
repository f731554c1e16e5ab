//! The template engine: minijinja with the libraries, the user's overrides and
//! snippets, and a guard on every value written.
//!
//! The guard is the last line of defence against configuration injection:
//! whatever a template prints with `{{ … }}` must not hold a control character
//! (a line break would start a new HAProxy directive). Values from Kubernetes
//! objects are validated before they get here; this catches what a custom
//! template reads straight from an object.

use minijinja::syntax::SyntaxConfig;
use minijinja::value::Value;
use minijinja::{Environment, Error, ErrorKind, UndefinedBehavior};

use crate::config::TemplateConfig;
use crate::library::{EXTENSION_POINTS, LIBRARY};

const SNIPPET_PREFIX: &str = "snippets/";

/// Builds the environment once per configuration; renders reuse it.
pub(crate) fn environment(templates: &TemplateConfig) -> Result<Environment<'static>, Error> {
    let mut env = Environment::new();
    env.set_syntax(
        SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()?,
    );
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_formatter(|out, _state, value| {
        // A string or a number (most of what is written) is written as it
        // is, not copied first: a large haproxy.cfg writes a few hundred
        // thousand values. A number holds no control character.
        let copy;
        let text = match value.as_str() {
            Some(text) => text,
            None if value.is_number() => return write!(out, "{value}").map_err(Error::from),
            None => {
                copy = value.to_string();
                &copy
            }
        };
        // An ASCII text (most of them) is checked a byte at a time.
        let clean = if text.is_ascii() {
            !text.bytes().any(|b| b.is_ascii_control())
        } else {
            !text.chars().any(char::is_control)
        };
        if !clean && let Some(bad) = text.chars().find(|c| c.is_control()) {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "refusing to write {text:?} into the HAProxy configuration: it holds the control character {bad:?}"
                ),
            ));
        }
        out.write_str(text).map_err(Error::from)
    });
    for (name, source) in LIBRARY {
        let source = templates
            .overrides
            .get(*name)
            .map_or(*source, String::as_str);
        env.add_template_owned(name.to_string(), source.to_string())?;
    }
    let mut snippet_names: Vec<String> = Vec::new();
    for (name, source) in &templates.snippets {
        env.add_template_owned(format!("{SNIPPET_PREFIX}{name}"), source.clone())?;
        snippet_names.push(name.clone());
    }
    env.add_function("snippets", move |point: &str| -> Result<Value, Error> {
        if !EXTENSION_POINTS.contains(&point) {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!(
                    "{point:?} is no extension point; these are: {}",
                    EXTENSION_POINTS.join(", ")
                ),
            ));
        }
        let prefix = format!("{point}-");
        let names: Vec<Value> = snippet_names
            .iter()
            .filter(|n| n.starts_with(&prefix))
            .map(|n| Value::from(n.as_str()))
            .collect();
        Ok(Value::from(names))
    });
    env.add_filter("quote", quote);
    env.add_filter("address", address);
    Ok(env)
}

/// A string as one HAProxy word in double quotes: `\` and `"` escaped, `$`
/// escaped so HAProxy does not expand environment variables in it.
fn quote(value: &str) -> Result<String, Error> {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c.is_control() {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("cannot quote {value:?}: it holds a control character"),
            ));
        }
        if matches!(c, '"' | '\\' | '$') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Ok(out)
}

/// An address for `<address>:<port>`: IPv6 addresses get brackets; any
/// other is the value given, not a copy of it.
fn address(value: Value) -> Result<Value, Error> {
    match value.as_str() {
        Some(text) if text.contains(':') => Ok(Value::from(format!("[{text}]"))),
        Some(_) => Ok(value),
        None => Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("address expects a string, not {}", value.kind()),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_escapes_what_haproxy_interprets() {
        assert_eq!(
            quote(r#"a "b" \ $HOME %t"#).expect("quote"),
            r#""a \"b\" \\ \$HOME %t""#
        );
        assert!(quote("a\nb").is_err());
    }

    #[test]
    fn the_guard_refuses_line_breaks_from_any_value() {
        let mut templates = TemplateConfig::default();
        templates.snippets.insert(
            "global-x".to_string(),
            "  setenv X {{ settings.values.x }}\n".to_string(),
        );
        let env = environment(&templates).expect("env");
        let tmpl = env.get_template("snippets/global-x").expect("snippet");
        let ok = tmpl.render(minijinja::context! { settings => minijinja::context! { values => minijinja::context! { x => "1" } } });
        assert_eq!(ok.expect("renders"), "  setenv X 1\n");
        let err = tmpl
            .render(minijinja::context! { settings => minijinja::context! { values => minijinja::context! { x => "1\nbind :1" } } })
            .expect_err("must refuse");
        assert!(err.to_string().contains("control character"), "{err}");
    }
}
