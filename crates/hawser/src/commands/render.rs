//! `hawser render`: write one rendered version into a directory.

use std::fs;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use hawser_controller::write_tree;
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

/// Re-rendering into the same directory keeps its generated default
/// certificate, so unchanged input gives unchanged output.
fn keep_default_certificate(renderer: Renderer, out: &Path) -> Renderer {
    match fs::read(out.join(DEFAULT_CERT_PATH)) {
        Ok(pem) => match CertificatePem::from_parts(&pem, &pem) {
            Ok(cert) => renderer.with_default_certificate(cert),
            Err(_) => renderer,
        },
        Err(_) => renderer,
    }
}
