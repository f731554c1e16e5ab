//! The local configuration file (`--config FILE`): the render configuration
//! and the validation tests, as a `HawserConfig`'s `spec.settings`,
//! `spec.templates` and `spec.tests` hold them in a cluster.
//!
//! ```text
//!  YAML { settings, templates, tests } ──from_yaml──► ConfigFile { render: RenderConfig, tests }
//!        unknown fields refused                        both validated once
//! ```

use hawser_crd::{InvalidTest, ValidationTest, validate_tests};
use hawser_render::{ConfigError, RenderConfig, Settings, TemplateConfig};
use serde::Deserialize;

/// A validated configuration file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigFile {
    /// What the templates read.
    pub render: RenderConfig,
    /// What `hawser test` proves against the render.
    pub tests: Vec<ValidationTest>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// Not YAML, an unknown field, or a bad setting or template.
    #[error(transparent)]
    Render(#[from] ConfigError),
    /// A validation test that cannot be run as written.
    #[error(transparent)]
    Test(#[from] InvalidTest),
}

/// The file as written: every section optional, unknown fields refused at
/// every level the render configuration checks (settings, templates) and at
/// the top.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileSections {
    settings: Settings,
    templates: TemplateConfig,
    tests: Vec<ValidationTest>,
}

impl ConfigFile {
    /// Parses and validates a config file's text. An empty file is the defaults.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigFileError> {
        let sections: Option<FileSections> =
            serde_saphyr::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        let sections = sections.unwrap_or_default();
        let render = RenderConfig {
            settings: sections.settings,
            templates: sections.templates,
        };
        render.validate()?;
        validate_tests(&sections.tests)?;
        Ok(ConfigFile {
            render,
            tests: sections.tests,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]
    use super::*;

    #[test]
    fn empty_file_is_the_defaults() {
        assert_eq!(ConfigFile::from_yaml("").unwrap(), ConfigFile::default());
    }

    #[test]
    fn tests_sit_beside_settings_and_templates() {
        let file = ConfigFile::from_yaml(
            "settings:\n  httpPort: 8080\ntests:\n  - name: web\n    request: { host: web.example.com, path: /a }\n    expect: { status: 200, service: app/web }\n",
        )
        .unwrap();
        assert_eq!(file.render.settings.http_port, 8080);
        assert_eq!(file.tests.len(), 1);
        assert_eq!(file.tests[0].expect.service.as_deref(), Some("app/web"));
    }

    #[test]
    fn unknown_fields_are_still_refused() {
        for (yaml, needle) in [
            ("settings:\n  httpPrt: 1\n", "httpPrt"),
            ("templates:\n  override: {}\n", "override"),
            ("test:\n  - name: a\n", "test"),
        ] {
            let error = ConfigFile::from_yaml(yaml).unwrap_err().to_string();
            assert!(error.contains(needle), "{yaml}: {error}");
        }
    }

    #[test]
    fn a_bad_test_is_named() {
        let error = ConfigFile::from_yaml(
            "tests:\n  - name: web\n    request: { host: web.example.com }\n    expect: {}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(error.contains("tests[0] (\"web\"): expect"), "{error}");
        let error = ConfigFile::from_yaml("settings:\n  httpPort: 443\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("httpPort"), "{error}");
    }
}
