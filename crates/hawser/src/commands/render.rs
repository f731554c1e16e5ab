//! `hawser render`: write one rendered version into a directory.

use std::fs;
use std::io;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use anyhow::Context as _;
use hawser_controller::write_tree;
use hawser_pki::cert;
use hawser_render::{CONFIG_PATH, CertificatePem, DEFAULT_CERT_PATH, Renderer};

use super::{UsageError, input};
use crate::cli::RenderArgs;

/// What a render writes at the top of its output; replaced on re-render.
const OWNED_ENTRIES: &[&str] = &[CONFIG_PATH, "maps", "certs"];

pub fn run(args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let inputs = input::load(&args.input)?;
    prepare_out(&args.out)?;
    let renderer = keep_default_certificate(inputs.renderer, &args.out);
    let rendered = renderer.render(&inputs.manifests.store)?;
    let rejected = input::report(&rendered);
    for entry in OWNED_ENTRIES {
        let path = args.out.join(entry);
        if path.is_dir() {
            fs::remove_dir_all(&path)
        } else if path.exists() {
            fs::remove_file(&path)
        } else {
            Ok(())
        }
        .with_context(|| format!("cannot replace {}", path.display()))?;
    }
    write_tree(&rendered.files, &args.out)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    println!(
        "rendered {} to {} ({} objects read, {} rejected, {} manifest problems)",
        input::summary(&rendered),
        args.out.display(),
        inputs.manifests.store.len(),
        rejected,
        inputs.manifests.problems.len(),
    );
    Ok(ExitCode::SUCCESS)
}

/// Refuses to write into a directory that holds something other than a render.
fn prepare_out(out: &Path) -> anyhow::Result<()> {
    if !out.exists() {
        return Ok(());
    }
    let empty = fs::read_dir(out)
        .with_context(|| format!("cannot read --out {}", out.display()))?
        .next()
        .is_none();
    if empty || out.join(CONFIG_PATH).is_file() {
        return Ok(());
    }
    Err(UsageError(anyhow::anyhow!(
        "--out {} is not empty and holds no previous render; choose an empty or new directory",
        out.display()
    ))
    .into())
}

/// Re-rendering into the same directory keeps its default certificate, so
/// unchanged input gives byte-identical output. One that cannot be served
/// (not a certificate and its key, or expired) is replaced, and we say so.
/// `settings.defaultCertificate` (a Secret) still takes precedence.
fn keep_default_certificate(renderer: Renderer, out: &Path) -> Renderer {
    let path = out.join(DEFAULT_CERT_PATH);
    match previous_default_certificate(&path, SystemTime::now()) {
        Previous::Reusable(cert) => renderer.with_default_certificate(cert),
        Previous::Absent => renderer,
        Previous::Unusable(reason) => {
            eprintln!(
                "{} is not reused ({reason}): a new default certificate is generated",
                path.display()
            );
            renderer
        }
    }
}

/// The default certificate an earlier render left.
#[derive(Debug)]
enum Previous {
    Absent,
    Reusable(CertificatePem),
    /// Why it cannot be served again.
    Unusable(String),
}

fn previous_default_certificate(path: &Path, now: SystemTime) -> Previous {
    let pem = match fs::read(path) {
        Ok(pem) => pem,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Previous::Absent,
        Err(e) => return Previous::Unusable(format!("cannot read it: {e}")),
    };
    let cert = match CertificatePem::from_parts(&pem, &pem) {
        Ok(cert) => cert,
        Err(reason) => {
            return Previous::Unusable(
                reason
                    .replace("tls.crt", "its certificate")
                    .replace("tls.key", "its key"),
            );
        }
    };
    match cert::inspect(&pem) {
        Ok(info) if info.not_after <= now => Previous::Unusable("it expired".to_string()),
        Ok(_) => Previous::Reusable(cert),
        Err(e) => Previous::Unusable(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn only_a_served_default_certificate_is_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("default.pem");
        let now = SystemTime::now();
        assert!(matches!(
            previous_default_certificate(&path, now),
            Previous::Absent
        ));

        let key = rcgen::KeyPair::generate().expect("key");
        let mut params =
            rcgen::CertificateParams::new(vec!["hawser.invalid".to_string()]).expect("params");
        params.not_before = rcgen::date_time_ymd(2000, 1, 1);
        params.not_after = rcgen::date_time_ymd(2001, 1, 1);
        let cert = params.self_signed(&key).expect("cert");
        fs::write(&path, format!("{}{}", cert.pem(), key.serialize_pem())).expect("write");
        match previous_default_certificate(&path, now) {
            Previous::Unusable(reason) => assert_eq!(reason, "it expired"),
            other => panic!("an expired certificate: {other:?}"),
        }
        // 2000-06-14, inside its validity.
        let then = UNIX_EPOCH + Duration::from_secs(961_000_000);
        assert!(matches!(
            previous_default_certificate(&path, then),
            Previous::Reusable(_)
        ));

        fs::write(&path, "garbage").expect("write");
        match previous_default_certificate(&path, now) {
            Previous::Unusable(reason) => assert!(reason.contains("its certificate"), "{reason}"),
            other => panic!("garbage: {other:?}"),
        }
    }
}
