//! `hawser_served_certificate_expiry_seconds{namespace,secret}`: how long
//! until each Secret served as a certificate expires (negative once it
//! has), from the notAfter the last render read and the time of the scrape.
//!
//! The render reports notAfter only; the seconds left are worked out when
//! read, so the gauge never goes stale between renders and the render
//! itself never depends on the clock. A Secret no longer served loses its
//! series.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use hawser_render::ServedCertificates;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
struct SecretLabel {
    namespace: String,
    secret: String,
}

/// The gauge, and the notAfter (Unix seconds) of each served Secret.
#[derive(Debug, Default)]
pub(super) struct ServedExpiry {
    seconds_left: Family<SecretLabel, Gauge>,
    not_after: Mutex<BTreeMap<SecretLabel, i64>>,
}

impl ServedExpiry {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "served_certificate_expiry_seconds",
            "Seconds until the certificate of each TLS Secret HAProxy serves expires (negative once expired)",
            self.seconds_left.clone(),
        );
    }

    /// Takes the served certificates of the last render.
    pub fn follow(&self, served: &ServedCertificates) {
        let now: BTreeMap<SecretLabel, i64> = served
            .values()
            .map(|certificate| {
                let label = SecretLabel {
                    namespace: certificate.namespace.clone(),
                    secret: certificate.name.clone(),
                };
                (label, certificate.not_after)
            })
            .collect();
        let mut known = self
            .not_after
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for gone in known.keys().filter(|label| !now.contains_key(*label)) {
            self.seconds_left.remove(gone);
        }
        *known = now;
    }

    /// Sets each gauge to notAfter − `now`.
    pub fn refresh(&self, now: SystemTime) {
        let now = unix_seconds(now);
        let known = self
            .not_after
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for (label, not_after) in known.iter() {
            self.seconds_left
                .get_or_create(label)
                .set(not_after.saturating_sub(now));
        }
    }
}

fn unix_seconds(at: SystemTime) -> i64 {
    match at.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => i64::try_from(before.duration().as_secs()).map_or(i64::MIN, |s| -s),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hawser_render::ServedCertificate;

    use super::*;

    fn served(names: &[(&str, i64)]) -> ServedCertificates {
        names
            .iter()
            .map(|(name, not_after)| {
                let certificate = ServedCertificate {
                    namespace: "app".to_string(),
                    name: name.to_string(),
                    not_after: *not_after,
                    hosts: vec![format!("{name}.example.com")],
                    own_names: false,
                    warnings: Vec::new(),
                    referrers: Vec::new(),
                };
                (format!("app/{name}"), certificate)
            })
            .collect()
    }

    fn scrape(expiry: &ServedExpiry, now: i64) -> String {
        let mut registry = Registry::with_prefix("hawser");
        expiry.register(&mut registry);
        expiry.refresh(UNIX_EPOCH + Duration::from_secs(u64::try_from(now).unwrap()));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        out
    }

    #[test]
    fn seconds_left_count_from_the_scrape_and_go_negative() {
        let expiry = ServedExpiry::default();
        expiry.follow(&served(&[("old", 1_000), ("new", 5_000)]));
        let text = scrape(&expiry, 2_000);
        assert!(
            text.contains(
                "hawser_served_certificate_expiry_seconds{namespace=\"app\",secret=\"old\"} -1000\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "hawser_served_certificate_expiry_seconds{namespace=\"app\",secret=\"new\"} 3000\n"
            ),
            "{text}"
        );
        let text = scrape(&expiry, 4_000);
        assert!(text.contains("secret=\"new\"} 1000\n"), "{text}");
    }

    #[test]
    fn a_secret_no_longer_served_loses_its_series() {
        let expiry = ServedExpiry::default();
        expiry.follow(&served(&[("old", 1_000), ("new", 5_000)]));
        scrape(&expiry, 0);
        expiry.follow(&served(&[("new", 5_000)]));
        let text = scrape(&expiry, 0);
        assert!(!text.contains("secret=\"old\""), "{text}");
        assert!(text.contains("secret=\"new\"} 5000\n"), "{text}");
    }
}
