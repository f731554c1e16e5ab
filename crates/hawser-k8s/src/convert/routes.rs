//! Gateway API routes (gateway-api crate types) into views: HTTPRoute,
//! GRPCRoute, TLSRoute, TCPRoute.
//!
//! The crate generates one type per place a shape occurs (a GRPCRoute's
//! parentRef and an HTTPRoute's are distinct types with the same fields), so
//! shared shapes are read once: each is recast through its JSON form into the
//! HTTPRoute type of the same shape, and converted from there.

use gateway_api::experimental::tcproutes as tcp;
use gateway_api::grpcroutes as grpc;
use gateway_api::httproutes as http;
use gateway_api::tlsroutes as tls;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{ConvertError, FromK8s, invalid, namespaced_key};
use hawser_model::{
    BackendRef, GATEWAY_API_GROUP, GrpcMethodMatch, GrpcRoute, GrpcRouteMatch, GrpcRouteRule,
    HeaderModifier, HttpBackendRef, HttpFilter, HttpRoute, HttpRouteMatch, HttpRouteRule,
    HttpTimeouts, Kind, MirrorFraction, ObjectKey, ParentRef, PathMatch, PathMatchKind,
    PathModifier, RequestMirror, RequestRedirect, RouteMeta, StreamRouteRule, TcpRoute, TlsRoute,
    UrlRewrite, ValueMatch, ValueMatchKind,
};

/// The status code a `RequestRedirect` answers with when it names none.
const DEFAULT_REDIRECT_STATUS: i64 = 302;

impl FromK8s for HttpRoute {
    type K8s = http::HttpRoute;

    fn from_k8s(obj: &http::HttpRoute) -> Result<Self, ConvertError> {
        let kind = Kind::HttpRoute;
        let key = namespaced_key(kind, &obj.metadata)?;
        let fail = |reason: String| invalid(kind, &key, reason);
        let spec = &obj.spec;
        let rules = spec
            .rules
            .iter()
            .flatten()
            .map(|r| http_rule(r).map_err(&fail))
            .collect::<Result<_, _>>()?;
        let parents = parent_refs(spec.parent_refs.iter().flatten()).map_err(&fail)?;
        Ok(HttpRoute {
            meta: meta(&obj.metadata, key, parents, spec.hostnames.clone()),
            rules,
        })
    }
}

impl FromK8s for GrpcRoute {
    type K8s = grpc::GrpcRoute;

    fn from_k8s(obj: &grpc::GrpcRoute) -> Result<Self, ConvertError> {
        let kind = Kind::GrpcRoute;
        let key = namespaced_key(kind, &obj.metadata)?;
        let fail = |reason: String| invalid(kind, &key, reason);
        let spec = &obj.spec;
        let rules = spec
            .rules
            .iter()
            .flatten()
            .map(|r| grpc_rule(r).map_err(&fail))
            .collect::<Result<_, _>>()?;
        let parents = parent_refs(spec.parent_refs.iter().flatten()).map_err(&fail)?;
        Ok(GrpcRoute {
            meta: meta(&obj.metadata, key, parents, spec.hostnames.clone()),
            rules,
        })
    }
}

impl FromK8s for TlsRoute {
    type K8s = tls::TlsRoute;

    fn from_k8s(obj: &tls::TlsRoute) -> Result<Self, ConvertError> {
        let kind = Kind::TlsRoute;
        let key = namespaced_key(kind, &obj.metadata)?;
        let fail = |reason: String| invalid(kind, &key, reason);
        let spec = &obj.spec;
        let rules = spec
            .rules
            .iter()
            .map(|r| stream_rule(r.name.clone(), &r.backend_refs).map_err(&fail))
            .collect::<Result<_, _>>()?;
        let parents = parent_refs(spec.parent_refs.iter().flatten()).map_err(&fail)?;
        Ok(TlsRoute {
            meta: meta(&obj.metadata, key, parents, Some(spec.hostnames.clone())),
            rules,
        })
    }
}

impl FromK8s for TcpRoute {
    type K8s = tcp::TcpRoute;

    fn from_k8s(obj: &tcp::TcpRoute) -> Result<Self, ConvertError> {
        let kind = Kind::TcpRoute;
        let key = namespaced_key(kind, &obj.metadata)?;
        let fail = |reason: String| invalid(kind, &key, reason);
        let spec = &obj.spec;
        let rules = spec
            .rules
            .iter()
            .map(|r| stream_rule(r.name.clone(), &r.backend_refs).map_err(&fail))
            .collect::<Result<_, _>>()?;
        let parents = parent_refs(spec.parent_refs.iter().flatten()).map_err(&fail)?;
        Ok(TcpRoute {
            meta: meta(&obj.metadata, key, parents, None),
            rules,
        })
    }
}

fn meta(
    metadata: &ObjectMeta,
    key: ObjectKey,
    parent_refs: Vec<ParentRef>,
    hostnames: Option<Vec<String>>,
) -> RouteMeta {
    RouteMeta {
        key,
        generation: metadata.generation,
        created: metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        parent_refs,
        hostnames: hostnames.unwrap_or_default(),
    }
}

/// Reads a value of one generated type as another of the same shape.
fn recast<T: Serialize, U: DeserializeOwned>(value: &T) -> Result<U, String> {
    serde_json::to_value(value)
        .and_then(serde_json::from_value)
        .map_err(|e| format!("cannot read {}: {e}", std::any::type_name::<U>()))
}

fn parent_refs<'a, T: Serialize + 'a>(
    refs: impl Iterator<Item = &'a T>,
) -> Result<Vec<ParentRef>, String> {
    refs.map(|r| {
        let p: http::HttpRouteParentRefs = recast(r)?;
        Ok(ParentRef {
            group: p.group.unwrap_or_else(|| GATEWAY_API_GROUP.to_string()),
            kind: p.kind.unwrap_or_else(|| "Gateway".to_string()),
            namespace: p.namespace.filter(|n| !n.is_empty()),
            name: p.name,
            section_name: p.section_name.filter(|s| !s.is_empty()),
            port: p.port,
        })
    })
    .collect()
}

fn backend_ref(b: &http::HttpRouteRulesBackendRefs) -> BackendRef {
    BackendRef {
        group: b.group.clone().unwrap_or_default(),
        kind: b.kind.clone().unwrap_or_else(|| "Service".to_string()),
        name: b.name.clone(),
        namespace: b.namespace.clone().filter(|n| !n.is_empty()),
        port: b.port,
        weight: b.weight.unwrap_or(1),
    }
}

fn http_backend_ref(b: &http::HttpRouteRulesBackendRefs) -> Result<HttpBackendRef, String> {
    let filters = b
        .filters
        .iter()
        .flatten()
        .map(|f| recast(f).and_then(|f| filter(&f)))
        .collect::<Result<_, _>>()?;
    Ok(HttpBackendRef {
        backend: backend_ref(b),
        filters,
    })
}

fn stream_rule<T: Serialize>(name: Option<String>, refs: &[T]) -> Result<StreamRouteRule, String> {
    let backend_refs = refs
        .iter()
        .map(|b| recast(b).map(|b| backend_ref(&b)))
        .collect::<Result<_, _>>()?;
    Ok(StreamRouteRule { name, backend_refs })
}

fn http_rule(r: &http::HttpRouteRules) -> Result<HttpRouteRule, String> {
    let mut matches: Vec<HttpRouteMatch> = r.matches.iter().flatten().map(http_match).collect();
    if matches.is_empty() {
        matches.push(HttpRouteMatch::default());
    }
    let timeouts = r.timeouts.clone().unwrap_or_default();
    Ok(HttpRouteRule {
        name: r.name.clone(),
        matches,
        filters: r
            .filters
            .iter()
            .flatten()
            .map(filter)
            .collect::<Result<_, _>>()?,
        backend_refs: r
            .backend_refs
            .iter()
            .flatten()
            .map(http_backend_ref)
            .collect::<Result<_, _>>()?,
        timeouts: HttpTimeouts {
            request_ms: duration_ms("timeouts.request", timeouts.request.as_deref())?,
            backend_request_ms: duration_ms(
                "timeouts.backendRequest",
                timeouts.backend_request.as_deref(),
            )?,
        },
    })
}

/// A Gateway API duration (`1h30m`, `500ms`) in milliseconds.
fn duration_ms(what: &str, value: Option<&str>) -> Result<Option<u64>, String> {
    value
        .map(|v| {
            v.parse::<gateway_api::Duration>()
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .map_err(|e| format!("{what} {v:?} is not a duration: {e}"))
        })
        .transpose()
}

fn http_match(m: &http::HttpRouteRulesMatches) -> HttpRouteMatch {
    use http::HttpRouteRulesMatchesPathType as P;
    let default = HttpRouteMatch::default();
    let path = m.path.as_ref().map_or(default.path, |p| PathMatch {
        kind: match p.r#type {
            Some(P::Exact) => PathMatchKind::Exact,
            Some(P::RegularExpression) => PathMatchKind::RegularExpression,
            Some(P::PathPrefix) | None => PathMatchKind::PathPrefix,
        },
        value: p.value.clone().unwrap_or_else(|| "/".to_string()),
    });
    let headers = m
        .headers
        .iter()
        .flatten()
        .map(|h| ValueMatch {
            name: h.name.clone(),
            value: h.value.clone(),
            kind: match h.r#type {
                Some(http::HttpRouteRulesMatchesHeadersType::RegularExpression) => {
                    ValueMatchKind::RegularExpression
                }
                _ => ValueMatchKind::Exact,
            },
        })
        .collect();
    let query_params = m
        .query_params
        .iter()
        .flatten()
        .map(|q| ValueMatch {
            name: q.name.clone(),
            value: q.value.clone(),
            kind: match q.r#type {
                Some(http::HttpRouteRulesMatchesQueryParamsType::RegularExpression) => {
                    ValueMatchKind::RegularExpression
                }
                _ => ValueMatchKind::Exact,
            },
        })
        .collect();
    // The method enum serializes as its upper-case name.
    let method = m
        .method
        .as_ref()
        .and_then(|method| serde_json::to_value(method).ok())
        .and_then(|v| v.as_str().map(str::to_string));
    HttpRouteMatch {
        path,
        headers,
        query_params,
        method,
    }
}

fn filter(f: &http::HttpRouteRulesFilters) -> Result<HttpFilter, String> {
    use http::HttpRouteRulesFiltersType as T;
    let missing = |what: &str| format!("filter {what} has no {what} field");
    Ok(match f.r#type {
        T::RequestHeaderModifier => {
            let m: HeaderModifierShape = recast(
                f.request_header_modifier
                    .as_ref()
                    .ok_or_else(|| missing("requestHeaderModifier"))?,
            )?;
            HttpFilter::RequestHeaderModifier(m.into())
        }
        T::ResponseHeaderModifier => {
            let m: HeaderModifierShape = recast(
                f.response_header_modifier
                    .as_ref()
                    .ok_or_else(|| missing("responseHeaderModifier"))?,
            )?;
            HttpFilter::ResponseHeaderModifier(m.into())
        }
        T::RequestRedirect => {
            let r = f
                .request_redirect
                .as_ref()
                .ok_or_else(|| missing("requestRedirect"))?;
            let path: Option<PathModifierShape> = r.path.as_ref().map(recast).transpose()?;
            let scheme = r
                .scheme
                .as_ref()
                .and_then(|s| serde_json::to_value(s).ok())
                .and_then(|v| v.as_str().map(str::to_string));
            HttpFilter::RequestRedirect(RequestRedirect {
                scheme,
                hostname: r.hostname.clone(),
                path: path.map(PathModifierShape::into_modifier).transpose()?,
                port: r.port,
                status_code: r.status_code.unwrap_or(DEFAULT_REDIRECT_STATUS),
            })
        }
        T::UrlRewrite => {
            let r = f
                .url_rewrite
                .as_ref()
                .ok_or_else(|| missing("urlRewrite"))?;
            let path: Option<PathModifierShape> = r.path.as_ref().map(recast).transpose()?;
            HttpFilter::UrlRewrite(UrlRewrite {
                hostname: r.hostname.clone(),
                path: path.map(PathModifierShape::into_modifier).transpose()?,
            })
        }
        T::RequestMirror => {
            let m = f
                .request_mirror
                .as_ref()
                .ok_or_else(|| missing("requestMirror"))?;
            let b = &m.backend_ref;
            // The API admits one of the two; a fraction is kept exact.
            let (numerator, denominator) = match (&m.fraction, m.percent) {
                (Some(fr), _) => (fr.numerator, fr.denominator.unwrap_or(100)),
                (None, Some(percent)) => (percent, 100),
                (None, None) => (1, 1),
            };
            let denominator = denominator.max(1);
            let fraction = MirrorFraction {
                numerator: u32::try_from(numerator.clamp(0, denominator)).unwrap_or(0),
                denominator: u32::try_from(denominator).unwrap_or(1),
            };
            HttpFilter::RequestMirror(RequestMirror {
                backend: BackendRef {
                    group: b.group.clone().unwrap_or_default(),
                    kind: b.kind.clone().unwrap_or_else(|| "Service".to_string()),
                    name: b.name.clone(),
                    namespace: b.namespace.clone().filter(|n| !n.is_empty()),
                    port: b.port,
                    weight: 1,
                },
                fraction,
            })
        }
        T::ExtensionRef => HttpFilter::Unsupported("ExtensionRef".to_string()),
        _ => HttpFilter::Unsupported(
            serde_json::to_value(&f.r#type)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "unknown".to_string()),
        ),
    })
}

/// Request and response header modifiers, whichever type generated them.
#[derive(serde::Deserialize)]
struct HeaderModifierShape {
    #[serde(default)]
    set: Vec<NameValue>,
    #[serde(default)]
    add: Vec<NameValue>,
    #[serde(default)]
    remove: Vec<String>,
}

#[derive(serde::Deserialize)]
struct NameValue {
    name: String,
    value: String,
}

impl From<HeaderModifierShape> for HeaderModifier {
    fn from(m: HeaderModifierShape) -> Self {
        let pairs = |v: Vec<NameValue>| v.into_iter().map(|p| (p.name, p.value)).collect();
        HeaderModifier {
            set: pairs(m.set),
            add: pairs(m.add),
            remove: m.remove,
        }
    }
}

/// A redirect's or rewrite's `path`, whichever type generated it.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PathModifierShape {
    #[serde(rename = "type")]
    kind: String,
    replace_full_path: Option<String>,
    replace_prefix_match: Option<String>,
}

impl PathModifierShape {
    fn into_modifier(self) -> Result<PathModifier, String> {
        match (
            self.kind.as_str(),
            self.replace_full_path,
            self.replace_prefix_match,
        ) {
            ("ReplaceFullPath", Some(path), _) => Ok(PathModifier::ReplaceFullPath(path)),
            ("ReplacePrefixMatch", _, Some(path)) => Ok(PathModifier::ReplacePrefixMatch(path)),
            (kind, _, _) => Err(format!("path modifier {kind:?} has no value of its type")),
        }
    }
}

fn grpc_rule(r: &grpc::GrpcRouteRules) -> Result<GrpcRouteRule, String> {
    let mut matches: Vec<GrpcRouteMatch> = r
        .matches
        .iter()
        .flatten()
        .map(|m| GrpcRouteMatch {
            method: m.method.as_ref().map(|method| GrpcMethodMatch {
                kind: match method.r#type {
                    Some(grpc::GrpcRouteRulesMatchesMethodType::RegularExpression) => {
                        ValueMatchKind::RegularExpression
                    }
                    _ => ValueMatchKind::Exact,
                },
                service: method.service.clone().filter(|s| !s.is_empty()),
                method: method.method.clone().filter(|s| !s.is_empty()),
            }),
            headers: m
                .headers
                .iter()
                .flatten()
                .map(|h| ValueMatch {
                    name: h.name.clone(),
                    value: h.value.clone(),
                    kind: match h.r#type {
                        Some(grpc::GrpcRouteRulesMatchesHeadersType::RegularExpression) => {
                            ValueMatchKind::RegularExpression
                        }
                        _ => ValueMatchKind::Exact,
                    },
                })
                .collect(),
        })
        .collect();
    if matches.is_empty() {
        matches.push(GrpcRouteMatch::default());
    }
    Ok(GrpcRouteRule {
        name: r.name.clone(),
        matches,
        filters: r
            .filters
            .iter()
            .flatten()
            .map(|f| recast(f).and_then(|f| filter(&f)))
            .collect::<Result<_, _>>()?,
        backend_refs: r
            .backend_refs
            .iter()
            .flatten()
            .map(|b| recast(b).and_then(|b| http_backend_ref(&b)))
            .collect::<Result<_, _>>()?,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn http_route(spec: serde_json::Value) -> Result<HttpRoute, ConvertError> {
        let obj: http::HttpRoute = serde_json::from_value(json!({
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {"name": "web", "namespace": "app", "generation": 3},
            "spec": spec,
        }))
        .expect("valid HTTPRoute");
        HttpRoute::from_k8s(&obj)
    }

    #[test]
    fn http_route_defaults() {
        let route = http_route(json!({
            "parentRefs": [{"name": "gw", "sectionName": "http"}],
            "rules": [{"backendRefs": [{"name": "web", "port": 80}]}],
        }))
        .expect("converts");
        assert_eq!(route.meta.generation, Some(3));
        let parent = &route.meta.parent_refs[0];
        assert!(parent.is_gateway());
        assert_eq!(parent.key("app"), ObjectKey::new("app", "gw"));
        assert_eq!(parent.section_name.as_deref(), Some("http"));
        let rule = &route.rules[0];
        assert_eq!(rule.matches, vec![HttpRouteMatch::default()]);
        let backend = &rule.backend_refs[0].backend;
        assert!(backend.is_service());
        assert_eq!((backend.weight, backend.port), (1, Some(80)));
    }

    #[test]
    fn http_route_matches_filters_and_timeouts() {
        let route = http_route(json!({
            "rules": [{
                "matches": [{
                    "path": {"type": "Exact", "value": "/a"},
                    "method": "POST",
                    "headers": [{"name": "x-v", "value": "1", "type": "RegularExpression"}],
                    "queryParams": [{"name": "q", "value": "z"}],
                }],
                "filters": [
                    {"type": "RequestRedirect", "requestRedirect": {"scheme": "https",
                        "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/b"}}},
                    {"type": "RequestMirror", "requestMirror": {"backendRef": {"name": "m", "port": 8080},
                        "fraction": {"numerator": 1, "denominator": 4}}},
                    {"type": "ExtensionRef", "extensionRef": {"group": "x", "kind": "Y", "name": "z"}},
                ],
                "backendRefs": [{"name": "web", "port": 80, "weight": 0, "filters": [
                    {"type": "ResponseHeaderModifier", "responseHeaderModifier": {"set": [{"name": "a", "value": "b"}], "remove": ["c"]}},
                ]}],
                "timeouts": {"request": "1m30s", "backendRequest": "500ms"},
            }],
        }))
        .expect("converts");
        let rule = &route.rules[0];
        let m = &rule.matches[0];
        assert_eq!(m.path.kind, PathMatchKind::Exact);
        assert_eq!(m.method.as_deref(), Some("POST"));
        assert_eq!(m.headers[0].kind, ValueMatchKind::RegularExpression);
        assert_eq!(m.query_params[0].kind, ValueMatchKind::Exact);
        let HttpFilter::RequestRedirect(redirect) = &rule.filters[0] else {
            panic!("redirect expected: {:?}", rule.filters[0]);
        };
        assert_eq!(redirect.scheme.as_deref(), Some("https"));
        assert_eq!(redirect.status_code, 302);
        assert_eq!(
            redirect.path,
            Some(PathModifier::ReplacePrefixMatch("/b".to_string()))
        );
        let HttpFilter::RequestMirror(mirror) = &rule.filters[1] else {
            panic!("mirror expected");
        };
        assert_eq!(
            mirror.fraction,
            MirrorFraction {
                numerator: 1,
                denominator: 4
            }
        );
        assert_eq!(
            rule.filters[2],
            HttpFilter::Unsupported("ExtensionRef".to_string())
        );
        let backend = &rule.backend_refs[0];
        assert_eq!(backend.backend.weight, 0);
        let HttpFilter::ResponseHeaderModifier(modifier) = &backend.filters[0] else {
            panic!("modifier expected");
        };
        assert_eq!(modifier.set, vec![("a".to_string(), "b".to_string())]);
        assert_eq!(modifier.remove, vec!["c".to_string()]);
        assert_eq!(rule.timeouts.request_ms, Some(90_000));
        assert_eq!(rule.timeouts.backend_request_ms, Some(500));
    }

    #[test]
    fn a_mirror_share_is_a_fraction_of_requests() {
        let share = |mirror: serde_json::Value| {
            let route = http_route(json!({
                "rules": [{"filters": [{"type": "RequestMirror", "requestMirror": mirror}]}],
            }))
            .expect("converts");
            let HttpFilter::RequestMirror(m) = &route.rules[0].filters[0] else {
                panic!("mirror expected");
            };
            (m.fraction.numerator, m.fraction.denominator)
        };
        let to = json!({"name": "m", "port": 8080});
        assert_eq!(share(json!({"backendRef": to})), (1, 1));
        assert_eq!(share(json!({"backendRef": to, "percent": 35})), (35, 100));
        assert_eq!(
            share(json!({"backendRef": to, "fraction": {"numerator": 1, "denominator": 3}})),
            (1, 3)
        );
        assert_eq!(
            share(json!({"backendRef": to, "fraction": {"numerator": 7}})),
            (7, 100)
        );
    }

    #[test]
    fn a_bad_duration_names_the_route() {
        let err = http_route(json!({"rules": [{"timeouts": {"request": "soon"}}]}))
            .expect_err("rejected");
        assert!(
            err.to_string()
                .starts_with("HTTPRoute app/web: timeouts.request"),
            "{err}"
        );
    }

    #[test]
    fn grpc_and_stream_routes() {
        let obj: grpc::GrpcRoute = serde_json::from_value(json!({
            "metadata": {"name": "g", "namespace": "app"},
            "spec": {"rules": [{
                "matches": [{"method": {"service": "pkg.Svc", "method": "Get"}}],
                "backendRefs": [{"name": "grpc", "port": 9000, "weight": 2}],
            }]},
        }))
        .expect("valid GRPCRoute");
        let route = GrpcRoute::from_k8s(&obj).expect("converts");
        let method = route.rules[0].matches[0].method.clone().expect("method");
        assert_eq!(method.service.as_deref(), Some("pkg.Svc"));
        assert_eq!(route.rules[0].backend_refs[0].backend.weight, 2);

        let obj: tcp::TcpRoute = serde_json::from_value(json!({
            "metadata": {"name": "t"},
            "spec": {"parentRefs": [{"name": "gw", "namespace": "infra", "port": 5432}],
                     "rules": [{"backendRefs": [{"name": "db", "port": 5432}]}]},
        }))
        .expect("valid TCPRoute");
        let route = TcpRoute::from_k8s(&obj).expect("converts");
        assert_eq!(route.meta.key, ObjectKey::new("default", "t"));
        assert_eq!(
            route.meta.parent_refs[0].key("default"),
            ObjectKey::new("infra", "gw")
        );
        assert_eq!(route.rules[0].backend_refs[0].port, Some(5432));
    }
}
