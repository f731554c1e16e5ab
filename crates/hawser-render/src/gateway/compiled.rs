//! A route checked once, independent of the listeners it attaches to: its
//! valid rules, the rules it loses and why, and its unresolved references.

use hawser_model::{Kind, ObjectKey, RouteMeta, Store};

use super::backend_refs::{Resolver, Unresolved};
use super::filters::Resolution;
use crate::backends::BackendKey;
use crate::validate;

#[derive(Debug)]
pub(super) struct Compiled<R> {
    /// Rules that passed, with their index in the route.
    pub rules: Vec<R>,
    /// One message per rule that was dropped.
    pub rejected: Vec<String>,
    /// Set when the route as a whole is invalid (a bad hostname or name).
    pub route_error: Option<String>,
    /// The first reference of a kept rule that did not resolve.
    pub unresolved: Option<Unresolved>,
    /// Backends the kept rules use.
    pub backends: Vec<BackendKey>,
}

impl<R> Compiled<R> {
    /// Checks what the whole route shares, then compiles each rule with `rule`;
    /// a rule that fails is dropped, the others kept.
    pub fn build<T>(
        store: &Store,
        kind: Kind,
        meta: &RouteMeta,
        rules: &[T],
        mut rule: impl FnMut(usize, &T, &Resolver<'_>, &mut Resolution) -> Result<R, String>,
    ) -> Self {
        let mut compiled = Compiled {
            rules: Vec::new(),
            rejected: Vec::new(),
            route_error: None,
            unresolved: None,
            backends: Vec::new(),
        };
        if let Err(reason) = route_names(&meta.key, &meta.hostnames) {
            compiled.route_error = Some(reason);
            return compiled;
        }
        let resolver = Resolver {
            store,
            route_kind: kind,
            route: &meta.key,
        };
        for (index, given) in rules.iter().enumerate() {
            let mut resolution = Resolution::default();
            match rule(index, given, &resolver, &mut resolution) {
                Ok(r) => {
                    compiled.rules.push(r);
                    compiled.backends.extend(resolution.used);
                    if compiled.unresolved.is_none() {
                        compiled.unresolved = resolution.unresolved;
                    }
                }
                Err(reason) => compiled.rejected.push(format!("rule {index}: {reason}")),
            }
        }
        compiled
    }

    /// Accepted only if something of it can be served.
    pub fn accepted(&self) -> Result<(), String> {
        if let Some(reason) = &self.route_error {
            return Err(reason.clone());
        }
        if self.rules.is_empty() && !self.rejected.is_empty() {
            return Err(self.rejected.join("; "));
        }
        Ok(())
    }
}

fn route_names(key: &ObjectKey, hostnames: &[String]) -> Result<(), String> {
    validate::label_name("namespace", &key.namespace)?;
    validate::subdomain_name("name", &key.name)?;
    for host in hostnames {
        validate::host(host)?;
    }
    Ok(())
}
