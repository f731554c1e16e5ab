use std::sync::Arc;

use hawser_model::{Kind, ObjectKey, Store};

use super::*;
use crate::{RenderConfig, Renderer};
use hawser_plan::CertificatePlan;

fn service(namespace: &str, name: &str) -> ObjectRef {
    ObjectRef::new(Kind::Service, ObjectKey::new(namespace, name))
}

const CONFIG: &str = "\
global
  # snippet: tuning
  bogus-global
frontend f
  # r1: HTTPRoute app/web rule 0 match 0 on Gateway app/gw listener http
  http-request set-var(txn.gw_rule) str(r1) if { path_reg \"x\" }
  # r2: HTTPRoute team/api rule 1 match 0 on Gateway app/gw listener http
  http-request set-var(txn.gw_rule) str(r2) if { path_reg \"y\" }
  http-request set-var(txn.gw_scope) str(s)
  http-request set-header x \"v\" if { var(txn.gw_rule) -m str r1 }
# from: Service app/web port 80
backend be_app_web_80
  server s1 127.0.0.2:80
# from: hawser, for requests no route matches
backend hawser_not_found
  http-request return status 404
";

#[test]
fn a_rule_is_blamed_on_its_route_by_its_comment_or_by_its_name() {
    let route = |ns: &str, name: &str| ObjectRef::new(Kind::HttpRoute, ObjectKey::new(ns, name));
    assert_eq!(fault_at(CONFIG, 6), Fault::Object(route("app", "web")));
    assert_eq!(fault_at(CONFIG, 8), Fault::Object(route("team", "api")));
    assert_eq!(fault_at(CONFIG, 10), Fault::Object(route("app", "web")));
}

#[test]
fn a_shared_line_after_the_rules_blames_no_route() {
    // The nearest rule comment is two lines up: it is not this line's, and
    // no object is (the nearest mark is a snippet's).
    assert!(matches!(fault_at(CONFIG, 9), Fault::Configuration(_)));
}

#[test]
fn sections_are_blamed_on_their_mark() {
    assert_eq!(fault_at(CONFIG, 13), Fault::Object(service("app", "web")));
    assert_eq!(
        fault_at(CONFIG, 3),
        Fault::Configuration(Some("snippet tuning".into()))
    );
    assert_eq!(
        fault_at(CONFIG, 16),
        Fault::Configuration(Some("hawser, for requests no route matches".into()))
    );
    assert_eq!(fault_at(CONFIG, 1), Fault::Configuration(None));
    assert_eq!(fault_at(CONFIG, 99), Fault::Configuration(None));
}

#[test]
fn a_certificate_openssl_refuses_is_blamed_on_its_secret() {
    let mut rendered = Renderer::new(RenderConfig::default())
        .and_then(|r| r.render(&Store::new()))
        .expect("an empty store renders");
    Arc::make_mut(&mut rendered.plan)
        .certificates
        .push(CertificatePlan {
            path: "certs/app_old.pem".into(),
            source: "Secret app/old".into(),
            not_after: None,
        });
    let output = "[ALERT]    config : parsing [haproxy.cfg:40] : 'bind :443' in section 'frontend' : 'crt-list' : error processing line 2 in file 'certs/crt-list.txt' : unable to load SSL certificate into SSL Context 'certs/app_old.pem': ca md too weak.";
    assert_eq!(
        fault_of(&rendered, output),
        Fault::Object(ObjectRef::new(Kind::Secret, ObjectKey::new("app", "old")))
    );
    // The default certificate is hawser's own.
    let default = output.replace("certs/app_old.pem", "certs/default.pem");
    assert!(matches!(
        fault_of(&rendered, &default),
        Fault::Configuration(_)
    ));
    assert_eq!(fault_of(&rendered, "no alert"), Fault::Configuration(None));
}
