//! The checks of Secrets served as certificates: what is refused, what is
//! served with a warning, and that the clock only ever adds warnings.

use super::*;

#[test]
fn generated_certificate_passes_its_own_checks() {
    let pem = generate_default_certificate().expect("generate");
    let text = String::from_utf8(pem.as_bytes().to_vec()).expect("utf8");
    assert!(text.starts_with("-----BEGIN CERTIFICATE-----\n"));
    assert!(text.contains("PRIVATE KEY-----\n"));
}

#[test]
fn mismatched_key_and_garbage_are_rejected() {
    let a = rcgen::generate_simple_self_signed(vec!["a.test".to_string()]).expect("a");
    let b = rcgen::generate_simple_self_signed(vec!["b.test".to_string()]).expect("b");
    let crt = a.cert.pem();
    let wrong_key = b.signing_key.serialize_pem();
    let err = CertificatePem::from_parts(crt.as_bytes(), wrong_key.as_bytes()).unwrap_err();
    assert!(err.contains("does not match"), "{err}");
    let err = CertificatePem::from_parts(b"not a cert", wrong_key.as_bytes()).unwrap_err();
    assert!(err.contains("no certificate"), "{err}");
    let ok = CertificatePem::from_parts(crt.as_bytes(), a.signing_key.serialize_pem().as_bytes());
    assert!(ok.is_ok());
}

mod served {
    //! Served-or-refused per case, the warning text, and the clock.

    use std::collections::{BTreeMap, BTreeSet};
    use std::time::{Duration, UNIX_EPOCH};

    use hawser_model::{
        Ingress, IngressBackend, IngressClass, IngressPath, IngressRule, IngressTls, Object,
        PathType, ServicePortRef,
    };
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, IsCa,
        Issuer, KeyPair, date_time_ymd,
    };

    use super::super::checks::{covers, utc};
    use super::*;
    use crate::report::{Diagnostic, Severity};
    use crate::{RenderConfig, Renderer};

    const DAY: i64 = 86_400;
    /// 2030-01-01T00:00:00Z, when the test certificates become valid.
    const VALID_FROM: i64 = 1_893_456_000;
    /// 2030-01-31T00:00:00Z, when they expire.
    const VALID_UNTIL: i64 = VALID_FROM + 30 * DAY;
    /// A time the test certificates are valid at.
    const VALID: i64 = VALID_FROM + 10 * DAY;

    fn ca_params(common_name: &str) -> CertificateParams {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params
    }

    /// A root and an intermediate it signed.
    struct Pki {
        root: CertifiedIssuer<'static, KeyPair>,
        intermediate: CertifiedIssuer<'static, KeyPair>,
    }

    fn pki() -> Pki {
        let root_key = KeyPair::generate().expect("key");
        let root = CertifiedIssuer::self_signed(ca_params("Test Root"), root_key).expect("root");
        let key = KeyPair::generate().expect("key");
        let intermediate =
            CertifiedIssuer::signed_by(ca_params("Test Intermediate"), key, &root).expect("int");
        Pki { root, intermediate }
    }

    /// A leaf for `names`, valid from [`VALID_FROM`] to [`VALID_UNTIL`],
    /// signed by `issuer` (self-signed without one): its PEM and key.
    fn leaf(names: &[&str], issuer: Option<&Issuer<'_, KeyPair>>) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("params");
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, "leaf");
        params.not_before = date_time_ymd(2030, 1, 1);
        params.not_after = date_time_ymd(2030, 1, 31);
        let key = KeyPair::generate().expect("key");
        let cert = match issuer {
            Some(issuer) => params.signed_by(&key, issuer),
            None => params.self_signed(&key),
        }
        .expect("leaf");
        (cert.pem(), key.serialize_pem())
    }

    fn secret(name: &str, crt: &str, key: &str, ca: Option<&str>) -> Secret {
        Secret {
            key: ObjectKey::new("app", name),
            secret_type: "kubernetes.io/tls".to_string(),
            tls_crt: Some(crt.as_bytes().to_vec()),
            tls_key: Some(key.as_bytes().to_vec()),
            auth: None,
            ca_crt: ca.map(|ca| ca.as_bytes().to_vec()),
            entries: BTreeMap::new(),
        }
    }

    fn ingress_ref() -> ObjectRef {
        ObjectRef::new(Kind::Ingress, ObjectKey::new("app", "web"))
    }

    /// Secret `app/<name>` served for `hosts`, named by Ingress `app/web`.
    fn used_for(name: &str, hosts: &[&str]) -> (ObjectKey, TlsUse) {
        let usage = TlsUse {
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
            referrers: BTreeSet::from([ingress_ref()]),
            ..TlsUse::default()
        };
        (ObjectKey::new("app", name), usage)
    }

    struct Served {
        output: CertificateOutput,
        diagnostics: Vec<Diagnostic>,
        files: FileSet,
    }

    impl Served {
        /// Whether Secret `app/<name>` is written and listed in the crt-list.
        fn serves(&self, name: &str) -> bool {
            let path = format!("certs/app_{name}.pem");
            self.files.iter().any(|(p, _)| p == path)
                && self.output.plans.iter().any(|p| p.path == path)
                && self
                    .output
                    .crt_list
                    .entries
                    .iter()
                    .any(|e| e.certificate == path)
        }

        fn rejected(&self) -> Vec<&Diagnostic> {
            self.diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Rejected)
                .collect()
        }

        /// The warnings of Secret `app/<name>`: reasons and messages.
        fn warnings(&self, name: &str) -> Vec<(&'static str, String)> {
            self.output.served[&format!("app/{name}")]
                .warnings
                .iter()
                .map(|w| (w.reason, w.message.clone()))
                .collect()
        }

        /// The warning diagnostics on `object`.
        fn warned(&self, object: &ObjectRef) -> Vec<&str> {
            self.diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Warning && &d.object == object)
                .map(|d| d.message.as_str())
                .collect()
        }
    }

    fn serve(secrets: Vec<Secret>, uses: Vec<(ObjectKey, TlsUse)>, now: i64) -> Served {
        let default = DefaultCertificate {
            pem: generate_default_certificate().expect("default"),
            source: "generated".to_string(),
            secret: None,
        };
        serve_with_default(secrets, uses, now, &default)
    }

    fn serve_with_default(
        secrets: Vec<Secret>,
        uses: Vec<(ObjectKey, TlsUse)>,
        now: i64,
        default: &DefaultCertificate,
    ) -> Served {
        let mut store = Store::new();
        for secret in secrets {
            store.insert(Object::Secret(secret));
        }
        let uses: BTreeMap<ObjectKey, TlsUse> = uses.into_iter().collect();
        let mut files = FileSet::default();
        let mut diags = Diagnostics::default();
        let output = certificates(&store, &uses, default, now, &mut files, &mut diags);
        Served {
            output,
            diagnostics: diags.finish(),
            files,
        }
    }

    /// A good chain (leaf, then intermediate) for `names`.
    fn chained(pki: &Pki, names: &[&str]) -> (String, String) {
        let (crt, key) = leaf(names, Some(&pki.intermediate));
        (format!("{crt}{}", pki.intermediate.pem()), key)
    }

    fn secret_ref(name: &str) -> ObjectRef {
        ObjectRef::new(Kind::Secret, ObjectKey::new("app", name))
    }

    #[test]
    fn a_good_chain_is_served_without_warnings_and_its_expiry_is_planned() {
        let pki = pki();
        let (crt, key) = chained(&pki, &["a.example.com"]);
        let served = serve(
            vec![secret("web", &crt, &key, None)],
            vec![used_for("web", &["a.example.com"])],
            VALID,
        );
        assert!(served.serves("web"));
        assert!(served.diagnostics.is_empty(), "{:?}", served.diagnostics);
        let plan = served
            .output
            .plans
            .iter()
            .find(|p| p.path == "certs/app_web.pem");
        assert_eq!(plan.and_then(|p| p.not_after), Some(VALID_UNTIL));
        let certificate = &served.output.served["app/web"];
        assert_eq!(certificate.not_after, VALID_UNTIL);
        assert_eq!(certificate.hosts, ["a.example.com"]);
        let default = served
            .output
            .plans
            .iter()
            .find(|p| p.path == DEFAULT_CERT_PATH);
        assert_eq!(default.and_then(|p| p.not_after), None, "generated: none");
    }

    #[test]
    fn an_expired_certificate_is_served_with_a_warning() {
        let pki = pki();
        let (crt, key) = chained(&pki, &["a.example.com"]);
        let served = serve(
            vec![secret("web", &crt, &key, None)],
            vec![used_for("web", &["a.example.com"])],
            VALID_UNTIL + DAY,
        );
        assert!(served.serves("web"));
        assert!(served.rejected().is_empty());
        let warnings = served.warnings("web");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let (reason, message) = &warnings[0];
        assert_eq!(*reason, "CertificateExpired");
        assert_eq!(
            message,
            "TLS Secret app/web: its certificate expired at 2030-01-31T00:00:00Z; served anyway for a.example.com (refusing it would serve the default certificate, which fails every client): clients refuse it until it is renewed"
        );
        assert_eq!(served.warned(&secret_ref("web")), [message.as_str()]);
        assert_eq!(served.warned(&ingress_ref()), [message.as_str()]);
    }

    #[test]
    fn a_certificate_not_yet_valid_is_served_with_a_warning() {
        let pki = pki();
        let (crt, key) = chained(&pki, &["a.example.com"]);
        let served = serve(
            vec![secret("web", &crt, &key, None)],
            vec![used_for("web", &["a.example.com"])],
            VALID_FROM - DAY,
        );
        assert!(served.serves("web"));
        assert!(served.rejected().is_empty());
        let warnings = served.warnings("web");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].0, "CertificateNotYetValid");
        assert!(
            warnings[0]
                .1
                .starts_with("TLS Secret app/web: its certificate is not valid before 2030-01-01T00:00:00Z; served anyway for a.example.com"),
            "{}",
            warnings[0].1
        );
    }

    #[test]
    fn a_certificate_for_other_names_is_served_with_a_warning_naming_the_hosts() {
        let pki = pki();
        let (crt, key) = chained(&pki, &["a.example.com", "*.b.example.com"]);
        let hosts = [
            "a.example.com",
            "x.b.example.com",
            "c.example.com",
            "b.example.com",
        ];
        let served = serve(
            vec![secret("web", &crt, &key, None)],
            vec![used_for("web", &hosts)],
            VALID,
        );
        assert!(served.serves("web"));
        assert!(served.rejected().is_empty());
        let warnings = served.warnings("web");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].0, "CertificateHostMismatch");
        assert_eq!(
            warnings[0].1,
            "TLS Secret app/web: its certificate does not cover b.example.com, c.example.com (its names: a.example.com, *.b.example.com); served anyway for a.example.com, b.example.com, c.example.com, x.b.example.com (refusing it would serve the default certificate, which fails every client): clients refuse it for those hosts"
        );
        assert_eq!(served.warned(&ingress_ref()).len(), 1);
    }

    #[test]
    fn the_common_name_counts_only_without_dns_names() {
        // rcgen writes no subjectAltName for no names: the CN `leaf` is the name.
        let (crt, key) = leaf(&[], None);
        let served = serve(
            vec![secret("web", &crt, &key, None)],
            vec![used_for("web", &["leaf"])],
            VALID,
        );
        assert!(
            served.warnings("web").is_empty(),
            "{:?}",
            served.warnings("web")
        );
        let (crt, key) = leaf(&["a.example.com"], None);
        let served = serve(
            vec![secret("web", &crt, &key, None)],
            vec![used_for("web", &["leaf"])],
            VALID,
        );
        assert_eq!(served.warnings("web")[0].0, "CertificateHostMismatch");
    }

    #[test]
    fn wildcards_cover_one_label() {
        assert!(covers("*.example.com", "a.example.com"));
        assert!(covers("*.Example.com", "A.example.COM"));
        assert!(covers("a.example.com.", "a.example.com"));
        assert!(covers("*.example.com", "*.example.com"));
        assert!(!covers("*.example.com", "example.com"));
        assert!(!covers("*.example.com", "a.b.example.com"));
        assert!(!covers("a.example.com", "*.example.com"));
        assert!(!covers("a*.example.com", "ab.example.com"));
        assert!(!covers("*.example.com", "a.example.org"));
    }

    #[test]
    fn a_chain_without_its_intermediate_is_served_with_a_warning() {
        let pki = pki();
        let (crt, key) = leaf(&["a.example.com"], Some(&pki.intermediate));
        let served = serve(
            vec![secret("web", &crt, &key, None)],
            vec![used_for("web", &["a.example.com"])],
            VALID,
        );
        assert!(served.serves("web"));
        assert!(served.rejected().is_empty());
        let warnings = served.warnings("web");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(warnings[0].0, "CertificateChainIncomplete");
        assert_eq!(
            warnings[0].1,
            "TLS Secret app/web: tls.crt lacks the certificate of its issuer (CN=Test Intermediate), the intermediate; served anyway for a.example.com: clients that do not hold that CA certificate themselves fail to verify it (put it after the certificate in tls.crt)"
        );
        // The intermediate in ca.crt is still not sent: the same warning.
        let ca = pki.intermediate.pem();
        let served = serve(
            vec![secret("web", &crt, &key, Some(&ca))],
            vec![used_for("web", &["a.example.com"])],
            VALID,
        );
        assert_eq!(served.warnings("web").len(), 1);
    }

    #[test]
    fn a_leaf_of_a_root_in_ca_crt_or_self_signed_needs_no_intermediate() {
        let pki = pki();
        let (crt, key) = leaf(&["a.example.com"], Some(&pki.root));
        let root = pki.root.pem();
        let served = serve(
            vec![
                secret("by-root", &crt, &key, Some(&root)),
                secret("root-unknown", &crt, &key, None),
            ],
            vec![
                used_for("by-root", &["a.example.com"]),
                used_for("root-unknown", &["a.example.com"]),
            ],
            VALID,
        );
        assert!(served.warnings("by-root").is_empty());
        assert_eq!(
            served.warnings("root-unknown")[0].0,
            "CertificateChainIncomplete",
            "its issuer may be a root clients trust, or not: said as such"
        );
        let (crt, key) = leaf(&["a.example.com"], None);
        let served = serve(
            vec![secret("web", &crt, &key, None)],
            vec![used_for("web", &["a.example.com"])],
            VALID,
        );
        assert!(served.warnings("web").is_empty());
    }

    #[test]
    fn malformed_and_mismatched_secrets_are_refused_alone() {
        let pki = pki();
        let (crt, key) = chained(&pki, &["a.example.com"]);
        let (_, other_key) = leaf(&["a.example.com"], None);
        let served = serve(
            vec![
                secret("good", &crt, &key, None),
                secret("garbage", "not a certificate", &key, None),
                secret("mismatch", &crt, &other_key, None),
            ],
            vec![
                used_for("good", &["a.example.com"]),
                used_for("garbage", &["b.example.com"]),
                used_for("mismatch", &["c.example.com"]),
            ],
            VALID,
        );
        assert!(served.serves("good"));
        assert!(!served.serves("garbage"));
        assert!(!served.serves("mismatch"));
        let rejected: Vec<String> = served.rejected().iter().map(|d| d.to_string()).collect();
        assert_eq!(rejected.len(), 2, "{rejected:?}");
        assert!(
            rejected[0].starts_with("rejected: Secret app/garbage: tls.crt holds no certificate")
        );
        assert!(rejected[1].contains("Secret app/mismatch: tls.key does not match"));
        assert!(!served.output.served.contains_key("app/garbage"));
    }

    #[test]
    fn an_expired_default_certificate_from_a_secret_is_served_listed_and_warned_about() {
        let pki = pki();
        let (crt, key) = chained(&pki, &["fallback.example.com"]);
        let default = DefaultCertificate {
            pem: CertificatePem::from_parts(crt.as_bytes(), key.as_bytes()).expect("pem"),
            source: "Secret app/fallback".to_string(),
            secret: Some(ObjectKey::new("app", "fallback")),
        };
        let served = serve_with_default(
            vec![secret("fallback", &crt, &key, None)],
            Vec::new(),
            VALID_UNTIL + DAY,
            &default,
        );
        let plan = served
            .output
            .plans
            .iter()
            .find(|p| p.path == DEFAULT_CERT_PATH);
        assert_eq!(plan.and_then(|p| p.not_after), Some(VALID_UNTIL));
        assert!(served.rejected().is_empty());
        let certificate = &served.output.served["app/fallback"];
        assert!(certificate.hosts.is_empty());
        let warnings = served.warnings("fallback");
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert_eq!(
            warnings[0].1,
            "TLS Secret app/fallback: its certificate expired at 2030-01-31T00:00:00Z; served anyway for the names no other certificate serves (the default certificate) (refusing it would serve a generated one, which fails every client): clients refuse it until it is renewed"
        );
        assert_eq!(served.warned(&secret_ref("fallback")).len(), 1);
    }

    #[test]
    fn the_clock_turns_warnings_on_and_off_and_never_refuses() {
        let pki = pki();
        let (crt, key) = chained(&pki, &["a.example.com"]);
        let at = |now: i64| {
            let served = serve(
                vec![secret("web", &crt, &key, None)],
                vec![used_for("web", &["a.example.com"])],
                now,
            );
            assert!(served.serves("web"), "served at {}", utc(now));
            assert!(
                served.rejected().is_empty(),
                "nothing refused at {}",
                utc(now)
            );
            let reasons: Vec<&str> = served.warnings("web").iter().map(|w| w.0).collect();
            reasons
        };
        assert_eq!(at(VALID_FROM - DAY), ["CertificateNotYetValid"]);
        assert!(at(VALID_FROM + DAY).is_empty());
        assert!(at(VALID_UNTIL - DAY).is_empty());
        assert!(at(VALID_UNTIL).is_empty(), "valid through its notAfter");
        assert_eq!(at(VALID_UNTIL + DAY), ["CertificateExpired"]);
        assert_eq!(at(VALID_UNTIL + 400 * DAY), ["CertificateExpired"]);
        assert_eq!(at(0), ["CertificateNotYetValid"]);
    }

    fn tls_ingress(secret: &str, host: &str) -> Ingress {
        Ingress {
            key: ObjectKey::new("app", "web"),
            created: None,
            class_name: Some("hawser".to_string()),
            annotations: BTreeMap::new(),
            default_backend: None,
            tls: vec![IngressTls {
                hosts: vec![host.to_string()],
                secret_name: Some(secret.to_string()),
            }],
            rules: vec![IngressRule {
                host: Some(host.to_string()),
                paths: vec![IngressPath {
                    path: Some("/".to_string()),
                    path_type: PathType::Prefix,
                    backend: IngressBackend::Service {
                        name: "web".to_string(),
                        port: ServicePortRef::Number(80),
                    },
                }],
            }],
        }
    }

    #[test]
    fn the_renderers_clock_changes_warnings_only_never_files_or_plan() {
        let pki = pki();
        let (crt, key) = chained(&pki, &["a.example.com"]);
        let mut store = Store::new();
        store.insert(Object::Secret(secret("web", &crt, &key, None)));
        store.insert(Object::IngressClass(IngressClass {
            name: "hawser".to_string(),
            controller: crate::INGRESS_CONTROLLER.to_string(),
            is_default: false,
        }));
        store.insert(Object::Ingress(tls_ingress("web", "a.example.com")));
        let render_at = |now: i64| {
            let at = UNIX_EPOCH + Duration::from_secs(u64::try_from(now).expect("after 1970"));
            Renderer::new(RenderConfig::default())
                .expect("renderer")
                .at_time(at)
                .render(&store)
                .expect("render")
        };
        let before = render_at(VALID_UNTIL - DAY);
        let after = render_at(VALID_UNTIL + DAY);
        let cert = |r: &crate::Rendered| r.files.get("certs/app_web.pem").cloned();
        assert!(cert(&before).is_some());
        assert_eq!(cert(&before), cert(&after));
        let secret_plans = |r: &crate::Rendered| {
            r.plan
                .certificates
                .iter()
                .filter(|p| p.source.starts_with("Secret"))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(secret_plans(&before), secret_plans(&after));
        let warned = |r: &crate::Rendered| {
            r.diagnostics
                .iter()
                .filter(|d| d.message.contains("expired"))
                .map(|d| d.object.to_string())
                .collect::<Vec<_>>()
        };
        assert!(warned(&before).is_empty(), "{:?}", before.diagnostics);
        assert_eq!(warned(&after), ["Ingress app/web", "Secret app/web"]);
        assert!(after.served_certificates["app/web"].warnings.len() == 1);
        assert!(
            after
                .diagnostics
                .iter()
                .all(|d| d.severity != Severity::Rejected)
        );
    }

    #[test]
    fn times_are_written_in_utc() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(VALID_FROM), "2030-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400 + 3_661), "2000-02-29T01:01:01Z");
        assert_eq!(utc(-1), "1969-12-31T23:59:59Z");
    }
}
