//! The mirror actions a rule gets, and the view of the internal frontend.

use hawser_model::{MirrorFraction, ServicePortRef};

use super::super::{Action, actions, conditions};
use super::*;
use crate::backends::BackendKey;
use crate::gateway::{FilterEntry, ListenerEntry, ListenerProtocol, MirrorEntry};

fn mirror(service: &str, numerator: u32, denominator: u32) -> FilterEntry {
    let key = BackendKey {
        namespace: "app".to_string(),
        service: service.to_string(),
        port: ServicePortRef::Number(80),
        overrides: std::collections::BTreeMap::new(),
    };
    FilterEntry::RequestMirror(MirrorEntry {
        backend: key.name(),
        key,
        fraction: MirrorFraction {
            numerator,
            denominator,
        },
    })
}

/// The request actions of a rule with `filters`, as `kind when...` lines.
fn request_actions(filters: &[FilterEntry]) -> (RuleView, Vec<String>) {
    let listener = ListenerEntry::new("http", 80, ListenerProtocol::Http);
    let mut rule = RuleView::new("r1".to_string(), 0, String::new(), Vec::new());
    let ctx = actions::FilterContext {
        listener: &listener,
        prefix: None,
    };
    let chosen = [conditions::rule_is("r1")];
    actions::add_filters(&mut rule, filters, &chosen, &ctx);
    let lines = rule.request.iter().map(describe).collect();
    (rule, lines)
}

fn describe(action: &Action) -> String {
    let step = match &action.step {
        Step::Mirror { backend } => format!("mirror {backend}"),
        Step::SetHeader { name, .. } => format!("set {name}"),
        other => format!("{other:?}"),
    };
    let when: Vec<String> = action
        .when
        .iter()
        .map(|c| {
            format!(
                "{} {} {}",
                c.fetch,
                c.matcher,
                c.value.as_deref().unwrap_or("")
            )
        })
        .collect();
    format!("{step} if {}", when.join(" && "))
}

#[test]
fn mirrors_follow_the_other_filters_and_sample_their_share() {
    let header = FilterEntry::RequestHeaderModifier(hawser_model::HeaderModifier {
        set: vec![("x-a".to_string(), "1".to_string())],
        ..Default::default()
    });
    let filters = [
        mirror("all", 1, 1),
        mirror("none", 0, 100),
        header,
        mirror("third", 1, 3),
    ];
    let (rule, lines) = request_actions(&filters);
    assert_eq!(
        lines,
        [
            "set x-a if var(txn.gw_rule) -m str r1",
            "mirror be_app_all_80 if var(txn.gw_rule) -m str r1",
            "mirror be_app_third_80 if var(txn.gw_rule) -m str r1 && rand(3) -m int lt 1",
        ]
    );
    let view = mirror_view(&Settings::default(), [&rule]).expect("a rule mirrors");
    assert_eq!(view.backends, ["be_app_all_80", "be_app_third_80"]);
}

#[test]
fn the_socket_sits_beside_the_runtime_socket_or_in_the_tree() {
    let (rule, _) = request_actions(&[mirror("a", 1, 1), mirror("a", 1, 2)]);
    let relative = mirror_view(&Settings::default(), [&rule]).expect("a rule mirrors");
    assert_eq!(relative.address, "unix@mirror.sock");
    assert_eq!(relative.lua, LUA_PATH);
    assert_eq!(relative.backends, ["be_app_a_80"]);
    let settings = Settings {
        runtime_socket: Some("/run/hawser/admin.sock".to_string()),
        ..Settings::default()
    };
    let beside = mirror_view(&settings, [&rule]).expect("a rule mirrors");
    assert_eq!(beside.address, "unix@/run/hawser/mirror.sock");
    let (plain, _) = request_actions(&[]);
    assert_eq!(mirror_view(&settings, [&plain]), None);
}
