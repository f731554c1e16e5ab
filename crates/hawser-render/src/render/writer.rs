//! What the library templates see (`docs/templates.md`, "Template
//! context"), and the writer that renders haproxy.cfg and its structure
//! digest from it.

use std::collections::BTreeMap;
use std::sync::Arc;

use hawser_plan::{BackendPlan, MapPlan, Plan, SPARES_MAP_PATH};
use minijinja::value::Value;
use serde::Serialize;

use super::lazy_backends::LazyBackends;
use super::memo::{ConfigMemo, RestKey};
use super::reads::ContextReads;
use super::{RenderError, digest};
use crate::config::Settings;
use crate::features::FeatureView;
use crate::gateway_frontends::GatewayView;
use crate::pools;

/// The whole context of one render of the entry template.
#[derive(Serialize)]
struct TemplateContext<'a, B> {
    plan: PlanView<'a, B>,
    /// Everything else, the same whichever backends the plan declares.
    #[serde(flatten)]
    rest: &'a ContextRest<'a>,
}

/// A [`Plan`] as templates see it, serialized as the plan is, borrowed,
/// less the parts no template reads (see the `reads` module); its
/// `backends` are read where a template reads them (`lazy_backends`). The
/// digest itself is not known yet while haproxy.cfg is written.
#[derive(Serialize)]
struct PlanView<'a, B> {
    structure_digest: &'static str,
    backends: B,
    #[serde(skip_serializing_if = "Option::is_none")]
    maps: Option<&'a [MapPlan]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    certificates: Option<&'a [hawser_plan::CertificatePlan]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    crt_lists: Option<&'a [hawser_plan::CrtListPlan]>,
}

impl<'a, B> PlanView<'a, B> {
    fn of(plan: &'a Plan, backends: B, reads: ContextReads) -> Self {
        PlanView {
            structure_digest: "",
            backends,
            maps: reads.plan_maps.then_some(plan.maps.as_slice()),
            certificates: reads
                .plan_certificates
                .then_some(plan.certificates.as_slice()),
            crt_lists: reads.plan_crt_lists.then_some(plan.crt_lists.as_slice()),
        }
    }
}

/// Everything templates see but the plan.
#[derive(Serialize)]
pub(super) struct ContextRest<'a> {
    pub(super) settings: &'a Settings,
    pub(super) routing: Routing<'a>,
    /// What Ingresses ask of their routes (the `ingress` library's feature lines).
    pub(super) ingress_features: &'a FeatureView,
    /// Gateway API rules and frontends (the `gateway` library).
    pub(super) gateway: &'a GatewayView,
    /// The TCP services of `settings.tcpServices` (`ingress/tcp_services.cfg`).
    pub(super) tcp_services: &'a [crate::tcp_services::TcpServiceView],
    pub(super) tls: Tls,
    /// The kinds the configuration adds (`watch.extraResources`): each
    /// kind's objects as their JSON, in namespace/name order; none when no
    /// template reads them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) resources: Option<BTreeMap<&'a str, Vec<&'a serde_json::Value>>>,
}

/// The maps and backends routing goes by.
#[derive(Serialize)]
pub(super) struct Routing<'a> {
    pub(super) map: &'static str,
    /// The route map's second copy, and the map naming the copy requests
    /// read (see `hawser_plan::MapPlan::twin`).
    pub(super) twin_map: &'static str,
    pub(super) live_twins_map: &'static str,
    /// The regex routes' map (`map_reg`), looked up first.
    pub(super) regex_map: &'static str,
    /// Hosts redirected to their www. name or away from it.
    pub(super) www_redirect_map: &'static str,
    /// `replace-path` lines, one per route of an Ingress that rewrites.
    pub(super) rewrites: &'a [crate::ingress::Rewrite],
    /// Canary Ingresses' maps and the header and cookie names they go by.
    pub(super) canary: crate::ingress::CanaryView,
    pub(super) key_end: char,
    /// A Service's backend name → the spare serving it (see `backends/spares.cfg`).
    pub(super) spares_map: &'static str,
    pub(super) default_backend: &'a str,
    pub(super) not_found_backend: &'static str,
    /// The stick table counting requests and responses per route.
    pub(super) routes_table: &'static str,
    /// The conditions of each response class a route counts, in the order
    /// of its counters.
    pub(super) response_classes: &'static [&'static str],
}

/// Where TLS binds read their certificates.
#[derive(Serialize)]
pub(super) struct Tls {
    pub(super) crt_list: &'static str,
}

/// Writes haproxy.cfg from the library templates, and the plan's structure
/// digest with it, or takes both from the memo when the context is the one
/// they were last written from.
pub(super) struct ConfigWriter<'a> {
    pub(super) template: minijinja::Template<'a, 'a>,
    pub(super) rest: ContextRest<'a>,
    pub(super) reads: ContextReads,
    pub(super) memo: &'a ConfigMemo,
}

impl ConfigWriter<'_> {
    /// haproxy.cfg declaring `wanted` (the render's own backends) as the
    /// version after `previous`: the same backends as `previous`, new ones
    /// on spares, when that keeps the structure and haproxy.cfg names no
    /// backend it does not declare; every backend its own and full pools
    /// otherwise (see the `pools` module).
    pub(super) fn write_following(
        &self,
        plan: &mut Plan,
        wanted: Vec<Arc<BackendPlan>>,
        previous: Option<&Plan>,
        spares: u32,
    ) -> Result<String, RenderError> {
        if let Some(previous) = previous.filter(|_| spares > 0)
            && let Some(kept) = pools::lend(&wanted, previous)
        {
            let config = self.write(plan, kept)?;
            let same = plan.structure_digest == previous.structure_digest;
            if same && !pools::config_misnames(&config, &plan.backends) {
                return Ok(config);
            }
        }
        let config = self.write(plan, pools::fresh(wanted, previous, spares))?;
        // A template that does not route through the spares map cannot be
        // served from spares.
        if spares > 0 && !config.contains(SPARES_MAP_PATH) {
            let own = std::mem::take(&mut plan.backends);
            return self.write(
                plan,
                own.into_iter().filter(|b| !b.role.is_spare()).collect(),
            );
        }
        Ok(config)
    }

    /// Declares `backends` in `plan` (and the spares map that goes with
    /// them), writes haproxy.cfg and sets the structure digest.
    fn write(
        &self,
        plan: &mut Plan,
        backends: Vec<Arc<BackendPlan>>,
    ) -> Result<String, RenderError> {
        plan.backends = backends;
        let spares = pools::spares_map(&plan.backends);
        if let Some(map) = plan.maps.iter_mut().find(|m| m.path == SPARES_MAP_PATH) {
            *map = spares;
        }
        // The context less its backends, which the memo compares itself.
        let no_backends: &[Arc<BackendPlan>] = &[];
        let rest = TemplateContext {
            plan: PlanView::of(plan, no_backends, self.reads),
            rest: &self.rest,
        };
        let key = RestKey::of(&rest);
        let kept = key.and_then(|key| self.memo.get(key, &plan.backends));
        if let Some((config, structure_digest)) = kept {
            plan.structure_digest = structure_digest;
            return Ok(config);
        }
        let backends = Value::from_object(LazyBackends(plan.backends.clone()));
        let context = TemplateContext {
            plan: PlanView::of(plan, backends, self.reads),
            rest: &self.rest,
        };
        let config = self.template.render(minijinja::value::Serde(&context))?;
        let structure_digest = digest::structure_digest(&config, &plan.backends);
        if let Some(key) = key {
            self.memo
                .put(key, &plan.backends, &config, &structure_digest);
        }
        plan.structure_digest = structure_digest;
        Ok(config)
    }
}
