//! How long a read of the manifests directory takes when one file changed,
//! as local mode reads after a file event: the directory of the scale
//! benchmark (3,000 Ingresses in one file over 50 Services, an
//! EndpointSlice file per Service), and a new file with one Ingress, added
//! and removed in turn.
//!
//! ```text
//! cargo bench -p hawser-k8s --bench read
//! ```

#![allow(clippy::expect_used, reason = "a benchmark fails by panicking")]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use hawser_k8s::ManifestReader;

const INGRESSES: usize = 3_000;
const SERVICES: usize = 50;

fn ingress(name: &str, host: &str, service: &str) -> String {
    format!(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: {name}\n  namespace: scale\n\
         spec:\n  ingressClassName: hawser\n  rules:\n  - host: {host}\n    http:\n      paths:\n\
         \x20     - path: /\n        pathType: Prefix\n        backend:\n          service:\n\
         \x20           name: {service}\n            port:\n              number: 80\n"
    )
}

fn write_directory(dir: &Path) {
    let mut services = String::new();
    for index in 0..SERVICES {
        let name = format!("svc{index}");
        let _ = write!(
            services,
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: {name}\n  namespace: scale\n\
             spec:\n  ports:\n  - port: 80\n    targetPort: 8080\n---\n"
        );
        let slice = format!(
            "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: {name}-1\n\
             \x20 namespace: scale\n  labels:\n    kubernetes.io/service-name: {name}\n\
             addressType: IPv4\nports:\n- port: 8080\n  protocol: TCP\nendpoints:\n\
             - addresses: [\"10.0.{index}.1\"]\n  conditions:\n    ready: true\n\
             - addresses: [\"10.0.{index}.2\"]\n  conditions:\n    ready: true\n"
        );
        std::fs::write(dir.join(format!("slice-{name}.yaml")), slice).expect("write");
    }
    std::fs::write(dir.join("services.yaml"), services).expect("write");
    let mut ingresses = String::new();
    for index in 0..INGRESSES {
        let service = format!("svc{}", index % SERVICES);
        ingresses.push_str(&ingress(
            &format!("ing{index}"),
            &format!("h{index}.example.com"),
            &service,
        ));
        ingresses.push_str("---\n");
    }
    std::fs::write(dir.join("ingresses.yaml"), ingresses).expect("write");
}

fn read_one_change(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a directory");
    write_directory(dir.path());
    let mut reader = ManifestReader::default();
    let first = reader.read(dir.path()).expect("read");
    assert!(first.problems.is_empty(), "{:?}", first.problems);
    assert_eq!(first.store.ingresses().count(), INGRESSES);
    let added = dir.path().join("added.yaml");
    let text = ingress("added", "added.example.com", "svc0");
    let changed = BTreeSet::from([added.clone()]);
    let mut there = false;
    // The file is written or removed in the timed loop: a small part of a
    // read, as it is of a change in local mode.
    c.bench_function("read_one_change/3000", |b| {
        b.iter(|| {
            if there {
                std::fs::remove_file(&added).expect("remove");
            } else {
                std::fs::write(&added, &text).expect("write");
            }
            there = !there;
            reader.read_changed(dir.path(), &changed).expect("read")
        });
    });
}

criterion_group!(benches, read_one_change);
criterion_main!(benches);
