#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hawser_model::{Kind, ObjectKey};
use hawser_render::{CONFIG_PATH, RenderConfig, Renderer};

use super::*;

/// Two namespaces, each a Service behind an Ingress; shop/web asks for a
/// balance algorithm the fake gates below refuse.
const MANIFESTS: &str = r#"
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata:
  name: hawser
  annotations: { ingressclass.kubernetes.io/is-default-class: "true" }
spec: { controller: hawser.dev/ingress-controller }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: site, namespace: shop }
spec:
  rules:
    - host: shop.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: shop, annotations: { hawser.dev/balance: source } }
spec: { ports: [{ name: http, port: 80 }] }
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: { name: site, namespace: blog }
spec:
  rules:
    - host: blog.example.com
      http: { paths: [{ path: /, pathType: Prefix, backend: { service: { name: web, port: { number: 80 } } } }] }
---
apiVersion: v1
kind: Service
metadata: { name: web, namespace: blog }
spec: { ports: [{ name: http, port: 80 }] }
"#;

fn store() -> Store {
    crate::test_store::store_of(MANIFESTS)
}

fn renderer() -> Renderer {
    Renderer::new(RenderConfig::default()).unwrap()
}

fn shop_web() -> ObjectRef {
    ObjectRef::new(Kind::Service, ObjectKey::new("shop", "web"))
}

/// A gate that refuses any configuration holding `needle`, naming the
/// line as `haproxy -c` would.
fn refusing(needle: &'static str) -> Judge {
    Judge::new(move |rendered: &Rendered| {
        let config = rendered.files.text(CONFIG_PATH).unwrap_or_default();
        let verdict = match config.lines().position(|l| l.contains(needle)) {
            Some(index) => Err(GateError::Rejected {
                output: format!(
                    "[ALERT]    config : parsing [haproxy.cfg:{}] : bad line",
                    index + 1
                ),
                line: u32::try_from(index + 1).ok(),
                culprit: None,
            }),
            None => Ok(()),
        };
        Box::pin(std::future::ready(verdict))
    })
}

fn passing() -> Judge {
    Judge::new(|_: &Rendered| Box::pin(std::future::ready(Ok(()))))
}

/// Every render is judged.
fn always(_: &Rendered) -> bool {
    false
}

#[tokio::test]
async fn the_object_haproxy_refuses_is_left_out_and_the_rest_served() {
    let checked = render_checked(
        &renderer(),
        &store(),
        None,
        &[],
        &refusing("balance source"),
        always,
    )
    .await
    .unwrap();
    assert_eq!(checked.quarantined.len(), 1);
    assert_eq!(checked.quarantined[0].object_ref(), shop_web());
    let config = checked.rendered.files.text(CONFIG_PATH).unwrap();
    assert!(!config.contains("balance source"), "{config}");
    assert!(
        config.contains("be_blog_web"),
        "the other namespace is served"
    );
    let reported = checked
        .rendered
        .diagnostics
        .iter()
        .find(|d| d.object == shop_web())
        .expect("the quarantined Service is reported");
    assert_eq!(reported.severity, Severity::Rejected);
    assert!(
        reported.message.starts_with("quarantined: HAProxy refuses"),
        "{reported}"
    );
}

#[tokio::test]
async fn a_quarantined_object_costs_no_check_while_it_is_unchanged() {
    let store = store();
    let first = render_checked(
        &renderer(),
        &store,
        None,
        &[],
        &refusing("balance source"),
        always,
    )
    .await
    .unwrap();
    let checks = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&checks);
    let counting = Judge::new(move |_: &Rendered| {
        counted.fetch_add(1, Ordering::Relaxed);
        Box::pin(std::future::ready(Ok(())))
    });
    let again = render_checked(
        &renderer(),
        &store,
        None,
        &first.quarantined,
        &counting,
        always,
    )
    .await
    .unwrap();
    assert_eq!(
        checks.load(Ordering::Relaxed),
        1,
        "one check, no failed one first"
    );
    assert_eq!(again.quarantined, first.quarantined);

    // Its owner changes it: it is tried again (and passes now).
    let mut changed = store.clone();
    let Some(Object::Service(mut service)) = changed.remove(&shop_web()) else {
        panic!("shop/web is a Service");
    };
    service.annotations.insert("changed".into(), "yes".into());
    changed.insert(Object::Service(service));
    let retried = render_checked(
        &renderer(),
        &changed,
        None,
        &first.quarantined,
        &passing(),
        always,
    )
    .await
    .unwrap();
    assert!(retried.quarantined.is_empty());
}

#[tokio::test]
async fn snippets_and_hawsers_own_lines_are_never_quarantined_away() {
    // `frontend ingress` is hawser's own: nothing to leave out.
    let refused = render_checked(
        &renderer(),
        &store(),
        None,
        &[],
        &refusing("frontend ingress"),
        always,
    )
    .await;
    assert!(
        matches!(refused, Err(QuarantineError::Refused(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn leaving_objects_out_is_bounded() {
    // Six Services, every one refused: four are left out, then the
    // candidate is refused whole.
    let services: String = (0..6)
        .map(|n| {
            format!(
                "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{ name: site, namespace: ns{n} }}\nspec:\n  ingressClassName: hawser\n  rules:\n    - host: s{n}.example.com\n      http: {{ paths: [{{ path: /, pathType: Prefix, backend: {{ service: {{ name: web, port: {{ number: 80 }} }} }} }}] }}\n---\napiVersion: v1\nkind: Service\nmetadata: {{ name: web, namespace: ns{n}, annotations: {{ hawser.dev/balance: source }} }}\nspec: {{ ports: [{{ port: 80 }}] }}\n---\n"
            )
        })
        .collect();
    let store = crate::test_store::store_of(&format!("{MANIFESTS}\n---\n{services}"));
    let refused = render_checked(
        &renderer(),
        &store,
        None,
        &[],
        &refusing("balance source"),
        always,
    )
    .await;
    assert!(
        matches!(refused, Err(QuarantineError::TooMany(_))),
        "{refused:?}"
    );
    let refused = render_checked(
        &renderer(),
        &store,
        None,
        &[],
        &refusing("timeout connect"),
        always,
    )
    .await;
    assert!(
        matches!(refused, Err(QuarantineError::Refused(_))),
        "{refused:?}"
    );
}

/// A route whose header match the fake gate refuses, beside the Ingresses.
const ROUTES: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: { name: hawser }
spec: { controllerName: hawser.dev/gateway-controller }
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: { name: gw, namespace: infra }
spec:
  gatewayClassName: hawser
  listeners: [{ name: http, port: 80, protocol: HTTP, allowedRoutes: { namespaces: { from: All } } }]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: { name: odd, namespace: team }
spec:
  parentRefs: [{ name: gw, namespace: infra }]
  rules:
    - matches: [{ headers: [{ name: x-odd, value: refuse-me }] }]
      backendRefs: [{ name: web, port: 80 }]
"#;

#[tokio::test]
async fn a_quarantined_route_is_not_accepted_by_its_parents() {
    let store = crate::test_store::store_of(&format!("{MANIFESTS}\n---\n{ROUTES}"));
    let route = ObjectRef::new(Kind::HttpRoute, ObjectKey::new("team", "odd"));
    let checked = render_checked(
        &renderer(),
        &store,
        None,
        &[],
        &refusing("refuse-me"),
        always,
    )
    .await
    .unwrap();
    assert_eq!(checked.quarantined[0].object_ref(), route);
    let status = checked
        .rendered
        .gateway_status
        .routes
        .iter()
        .find(|r| r.route == route)
        .expect("the quarantined route keeps a status");
    assert_eq!(status.parents.len(), 1);
    let accepted = hawser_render::condition(&status.parents[0].conditions, "Accepted").unwrap();
    assert!(!accepted.is_true());
    assert_eq!(accepted.reason, "Quarantined");
    assert!(accepted.message.contains("HAProxy refuses"), "{accepted:?}");
}

#[tokio::test]
async fn a_lenient_judge_passes_what_it_could_not_check_and_nothing_it_refused() {
    let cannot_run = Judge::new(|_: &Rendered| {
        Box::pin(std::future::ready(Err(GateError::Haproxy(
            hawser_haproxy::HaproxyError::NotFound,
        ))))
    });
    let store = store();
    let strict = render_checked(&renderer(), &store, None, &[], &cannot_run, always).await;
    assert!(
        matches!(strict, Err(QuarantineError::Refused(_))),
        "{strict:?}"
    );
    let lenient = render_checked(
        &renderer(),
        &store,
        None,
        &[],
        &cannot_run.lenient(),
        always,
    )
    .await;
    assert!(lenient.is_ok_and(|c| c.quarantined.is_empty()));

    let refusing = refusing("frontend ingress").lenient();
    let refused = render_checked(&renderer(), &store, None, &[], &refusing, always).await;
    assert!(
        matches!(refused, Err(QuarantineError::Refused(_))),
        "{refused:?}"
    );
}
