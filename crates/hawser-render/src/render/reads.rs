//! Which parts of the template context some template can read.
//!
//! The context holds the whole plan, maps with every route entry included,
//! though the library templates write none of it. Turning those entries
//! into template values was much of a render's time, and a change of one
//! route changed the context, so haproxy.cfg could not be reused (see the
//! `memo` module). A part no template names is left out of the context:
//!
//! ```text
//! every template (library, overrides, snippets)
//!   └─ the variables it names (`plan.maps`, `plan`, `debug`, …)
//!        └─ ContextReads: plan.maps / certificates / crt_lists, resources
//! ```
//!
//! Leaving a part out is safe by construction: haproxy.cfg is a function of
//! the context the templates get, so a part left out cannot change it, and
//! a template that reached a left-out part anyway (by a way the names below
//! miss) would find it undefined, which is an error, never a silent change.
//! The names are found by minijinja's own analysis of each template, which
//! gives the chain of attributes read from a context variable (`plan.maps`
//! for `plan.maps[0].entries`, `plan` for `plan["maps"]` or `set p = plan`).
//! It does not look into the names of included templates, so a template
//! naming a context variable in an `include`, `import` or `extends` reads
//! all of it here; `debug()` prints the whole context, so it reads all.

use minijinja::Environment;

/// The parts of the context left out when no template names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContextReads {
    pub(crate) plan_maps: bool,
    pub(crate) plan_certificates: bool,
    pub(crate) plan_crt_lists: bool,
    pub(crate) resources: bool,
}

impl ContextReads {
    /// Every part: what a template that may read anything gets.
    const ALL: ContextReads = ContextReads {
        plan_maps: true,
        plan_certificates: true,
        plan_crt_lists: true,
        resources: true,
    };

    /// What the templates of `env` can read.
    pub(crate) fn of(env: &Environment<'_>) -> ContextReads {
        let mut names: Vec<String> = Vec::new();
        for (_, template) in env.templates() {
            names.extend(template.undeclared_variables(true));
            if names_in_includes(template.source()) {
                return ContextReads::ALL;
            }
        }
        ContextReads::from_names(&names)
    }

    fn from_names(names: &[String]) -> ContextReads {
        if names.iter().any(|name| name == "debug") {
            return ContextReads::ALL;
        }
        let reads = |path: &str| names.iter().any(|name| overlaps(name, path));
        ContextReads {
            plan_maps: reads("plan.maps"),
            plan_certificates: reads("plan.certificates"),
            plan_crt_lists: reads("plan.crt_lists"),
            resources: reads("resources"),
        }
    }
}

/// Whether reading `name` reads some of `path` (`plan` or `plan.maps.x`
/// for `plan.maps`).
fn overlaps(name: &str, path: &str) -> bool {
    let within = |outer: &str, inner: &str| {
        inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    };
    within(name, path) || within(path, name)
}

/// Whether an `include`, `import`, `from` or `extends` tag of `source`
/// names anything of the context (by its first word) in the template name
/// it computes, which the analysis does not look into.
fn names_in_includes(source: &str) -> bool {
    const ROOTS: [&str; 9] = [
        "plan",
        "settings",
        "routing",
        "ingress_features",
        "gateway",
        "tcp_services",
        "tls",
        "resources",
        "debug",
    ];
    let mut rest = source;
    while let Some(start) = rest.find("{%") {
        let tag = &rest[start + 2..];
        let end = tag.find("%}").unwrap_or(tag.len());
        let body = tag[..end].trim_start_matches(['-', '+']).trim_start();
        let keyword = body.split_whitespace().next().unwrap_or("");
        if matches!(keyword, "include" | "import" | "from" | "extends")
            && outside_strings(body)
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|word| ROOTS.contains(&word))
        {
            return true;
        }
        rest = &tag[end..];
    }
    false
}

/// `text` with the contents of its string literals blanked out: a
/// template named `"gateway/routing.cfg"` names no context variable.
fn outside_strings(text: &str) -> String {
    let mut quote = None;
    let mut escaped = false;
    text.chars()
        .map(|c| match quote {
            Some(_) if escaped => {
                escaped = false;
                ' '
            }
            Some(_) if c == '\\' => {
                escaped = true;
                ' '
            }
            Some(q) if c == q => {
                quote = None;
                ' '
            }
            Some(_) => ' ',
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                ' '
            }
            None => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(source: &str) -> ContextReads {
        let mut env = Environment::new();
        env.add_template_owned("t", source.to_string())
            .expect("parses");
        ContextReads::of(&env)
    }

    const NONE: ContextReads = ContextReads {
        plan_maps: false,
        plan_certificates: false,
        plan_crt_lists: false,
        resources: false,
    };

    #[test]
    fn parts_no_template_names_are_left_out() {
        let source = "{% for b in plan.backends %}{{ b.name }}{% endfor %}{{ settings.http_port }}";
        assert_eq!(reads(source), NONE);
    }

    #[test]
    fn the_library_templates_read_no_map_entries() {
        let env = crate::engine::environment(&crate::config::TemplateConfig::default())
            .expect("the library compiles");
        assert_eq!(ContextReads::of(&env), NONE);
    }

    #[test]
    fn a_part_named_or_read_whole_is_kept() {
        let maps = reads("{{ plan.maps[0].entries | length }}");
        assert_eq!(
            maps,
            ContextReads {
                plan_maps: true,
                ..NONE
            }
        );
        assert!(reads("{% set p = plan %}{{ p.maps }}").plan_maps);
        assert!(reads("{{ plan['maps'] }}").plan_maps);
        assert!(reads("{% for k, v in plan | items %}{% endfor %}").plan_crt_lists);
        assert!(reads("{{ resources.Thing }}").resources);
        assert_eq!(reads("{{ debug() }}"), ContextReads::ALL);
    }

    #[test]
    fn a_context_value_naming_an_included_template_reads_everything() {
        let mut env = Environment::new();
        env.add_template("other", "x").expect("parses");
        env.add_template("t", "{%- include settings.values.name -%}")
            .expect("parses");
        assert_eq!(ContextReads::of(&env), ContextReads::ALL);
        let mut env = Environment::new();
        env.add_template("gateway/routing.cfg", "x")
            .expect("parses");
        let names = "{% include \"snippets/\" ~ name %}{% include 'gateway/routing.cfg' %}";
        env.add_template("t", names).expect("parses");
        assert_eq!(ContextReads::of(&env), NONE);
    }
}
