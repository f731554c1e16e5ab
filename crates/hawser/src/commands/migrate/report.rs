//! The migration report as a person reads it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hawser_render::Settings;
use hawser_render::features::Verdict;

use super::{IngressReport, ServiceReport};

pub fn text(
    ingresses: &[IngressReport],
    services: &[ServiceReport],
    settings: &Settings,
) -> String {
    let mut out = String::new();
    let mut served = 0;
    let mut differing = 0;
    let mut refused = 0;
    let mut losing = 0;
    for ingress in ingresses {
        let _ = write!(out, "Ingress {}/{}", ingress.namespace, ingress.name);
        match (&ingress.class, &ingress.controller) {
            (Some(class), Some(controller)) if *controller != settings.ingress_controller => {
                let _ = write!(
                    out,
                    " (class {class} of {controller}: hawser serves it with the setting ingressController: {controller}, or once ingressClassName names a class of hawser's)"
                );
            }
            (Some(class), None) => {
                let _ = write!(
                    out,
                    " (class {class}, not among the manifests: give it an IngressClass of hawser's)"
                );
            }
            _ => {}
        }
        out.push('\n');
        annotations(&mut out, &ingress.annotations);
        let lost = ingress
            .annotations
            .values()
            .any(|v| matches!(v, Verdict::Lost));
        let differs = ingress
            .annotations
            .values()
            .any(|v| matches!(v, Verdict::Differs(_) | Verdict::Ignored));
        match &ingress.refused {
            Some(why) => {
                refused += 1;
                let _ = writeln!(
                    out,
                    "  => refused: {}",
                    unless_said(why, &ingress.annotations)
                );
            }
            None if lost => {
                losing += 1;
                let _ = writeln!(out, "  => served WITHOUT the access control above");
            }
            None if differs => {
                differing += 1;
                let _ = writeln!(out, "  => served, with the differences above");
            }
            None => {
                served += 1;
                let _ = writeln!(out, "  => served as it is");
            }
        }
    }
    for service in services {
        let _ = writeln!(out, "Service {}/{}", service.namespace, service.name);
        annotations(&mut out, &service.annotations);
        match &service.refused {
            Some(why) => {
                let why = unless_said(why, &service.annotations);
                let _ = writeln!(out, "  => refused (its backends answer 503): {why}");
            }
            None => {
                let _ = writeln!(out, "  => served");
            }
        }
    }
    let _ = writeln!(
        out,
        "\n{} Ingresses: {served} served as they are, {differing} served with differences, {refused} refused, {losing} losing access control",
        ingresses.len()
    );
    out
}

/// `why`, or "as above" when an annotation's refusal already said it.
fn unless_said<'a>(why: &'a str, verdicts: &BTreeMap<String, Verdict>) -> &'a str {
    let said = verdicts
        .values()
        .any(|v| matches!(v, Verdict::Refused(reason) if reason == why));
    if said { "as above" } else { why }
}

fn annotations(out: &mut String, verdicts: &BTreeMap<String, Verdict>) {
    for (annotation, verdict) in verdicts {
        let _ = match verdict {
            Verdict::Served => writeln!(out, "  served    {annotation}"),
            Verdict::Differs(how) => writeln!(out, "  differs   {annotation}: {how}"),
            Verdict::Ignored => writeln!(
                out,
                "  ignored   {annotation}: not served; served without it"
            ),
            Verdict::Lost => writeln!(
                out,
                "  LOST      {annotation}: about access control, and dropped under foreignAnnotations"
            ),
            Verdict::Refused(why) => writeln!(out, "  refused   {annotation}: {why}"),
            Verdict::NotRead => Ok(()),
        };
    }
}
