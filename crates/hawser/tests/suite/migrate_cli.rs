//! `hawser migrate` on a namespace as ingress-nginx served it (fixture
//! `migrate/`): the report names every annotation's fate and each
//! Ingress's (a snapshot), exits 1 because one Ingress would be refused,
//! and the `hawser test` cases it writes pass against the real HAProxy.

use crate::support::{Manifests, TestCertificate, Vars, hawser_command, run_to_end};

fn manifests() -> Manifests {
    let cert = TestCertificate::self_signed("www.example.com");
    let mut vars = Vars::new();
    vars.insert("WWW_TLS_CRT".into(), cert.cert_yaml());
    vars.insert("WWW_TLS_KEY".into(), cert.key_yaml());
    Manifests::from_fixture("migrate", &vars)
}

#[test]
fn the_report_names_each_annotations_fate_and_exits_1_for_a_refusal() {
    let manifests = manifests();
    let mut command = hawser_command(["migrate", "--from", "nginx"]);
    command.arg("--manifests").arg(manifests.path());
    let run = run_to_end(&mut command);
    assert_eq!(run.status.code(), Some(1), "{}", run.describe());
    insta::assert_snapshot!("report", run.stdout);

    let mut command = hawser_command(["migrate", "--output", "json"]);
    command.arg("--manifests").arg(manifests.path());
    let json: serde_json::Value = serde_json::from_str(&run_to_end(&mut command).stdout).unwrap();
    let api = json["ingresses"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "api")
        .unwrap();
    assert_eq!(
        api["annotations"]["nginx.ingress.kubernetes.io/whitelist-source-range"]["verdict"],
        "served"
    );
    assert_eq!(
        api["annotations"]["nginx.ingress.kubernetes.io/limit-rps"]["verdict"],
        "differs"
    );
}

#[test]
fn the_tests_it_writes_pass_against_the_real_haproxy() {
    let manifests = manifests();
    let tests = tempfile::NamedTempFile::new().unwrap();
    let mut command = hawser_command(["migrate"]);
    command
        .arg("--manifests")
        .arg(manifests.path())
        .arg("--tests")
        .arg(tests.path());
    run_to_end(&mut command);
    let written = std::fs::read_to_string(tests.path()).unwrap();
    assert!(
        written.contains("ingressController: k8s.io/ingress-nginx"),
        "{written}"
    );

    let mut command = hawser_command(["test"]);
    command
        .arg("--manifests")
        .arg(manifests.path())
        .arg("--config")
        .arg(tests.path());
    let run = run_to_end(&mut command);
    assert!(run.status.success(), "{written}\n{}", run.describe());
    for name in [
        "PASS shop/admin admin.example.com/",
        "PASS shop/api api.example.com/v1",
        "PASS shop/old old.example.com/",
        "PASS shop/partners partners.example.com/",
        "PASS shop/www www.example.com/",
    ] {
        assert!(run.stdout.contains(name), "{name}\n{}", run.describe());
    }
    assert!(
        !run.stdout.contains("legacy"),
        "a refused Ingress has no test"
    );
}

/// The same namespace in an API server (the fake one): `--kubernetes` reads
/// it whole, Secrets included, and reports what `--manifests` reports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_gives_the_same_report_as_its_manifests() {
    use k8s_openapi::api::core::v1 as core;
    use k8s_openapi::api::networking::v1 as networking;
    use kube::api::ApiResource;

    let manifests = manifests();
    let (fake, addr) = hawser_fake_api::FakeApi::start_http().await;
    for file in ["cluster.yaml", "ingresses.yaml"] {
        let text = std::fs::read_to_string(manifests.path().join(file)).unwrap();
        for object in serde_saphyr::from_multiple::<serde_json::Value>(&text).unwrap() {
            let resource = match object["kind"].as_str().unwrap() {
                "IngressClass" => ApiResource::erase::<networking::IngressClass>(&()),
                "Ingress" => ApiResource::erase::<networking::Ingress>(&()),
                "Service" => ApiResource::erase::<core::Service>(&()),
                "Secret" => ApiResource::erase::<core::Secret>(&()),
                other => panic!("the fixture has a {other} this test does not apply"),
            };
            fake.apply_dynamic(&resource, object);
        }
    }
    let kubeconfig = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        kubeconfig.path(),
        hawser_fake_api::FakeApi::kubeconfig(addr, "shop"),
    )
    .unwrap();

    let report = |args: &[&str], kubernetes: bool| {
        let mut command = hawser_command(["migrate"]);
        command.args(args);
        if kubernetes {
            command.env("KUBECONFIG", kubeconfig.path());
        } else {
            command.arg("--manifests").arg(manifests.path());
        }
        run_to_end(&mut command)
    };
    let from_cluster =
        tokio::task::block_in_place(|| report(&["--kubernetes", "--from", "nginx"], true));
    let from_files = report(&["--from", "nginx"], false);
    assert_eq!(
        from_cluster.status.code(),
        Some(1),
        "{}",
        from_cluster.describe()
    );
    assert_eq!(
        from_cluster.stdout,
        from_files.stdout,
        "{}",
        from_cluster.describe()
    );
}
