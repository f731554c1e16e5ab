//! A Gateway's `status.addresses`, and whether the addresses its
//! `spec.addresses` asks for can be honoured.
//!
//! hawser does not provision a load balancer per Gateway: every Gateway is
//! served by the same HAProxy pods, on the addresses of the publish Service.
//! So a Gateway's addresses are that Service's, and a requested address is
//! honoured only when the Service has it (an empty value: when it has one of
//! that type). Otherwise `Programmed` is `False`:
//!
//! | the publish Service | reason |
//! |---|---|
//! | has none of the requested addresses' values | `AddressNotUsable` |
//! | none configured, and addresses are requested | `AddressNotUsable` |
//! | does not exist, has no address yet, or none of a requested type | `AddressNotAssigned` |

use hawser_model::GatewayAddress;
use serde_json::{Value, json};

use crate::addresses::{PublishedAddresses, ServiceAddresses};

/// The most addresses a Gateway's status may list.
const MAX_ADDRESSES: usize = 16;

const IP_ADDRESS: &str = "IPAddress";
const HOSTNAME: &str = "Hostname";

/// What a Gateway's status says about its addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressAssignment {
    /// `status.addresses` (`null` removes it); `None` leaves what the
    /// object says (the publish Service has not been read yet).
    pub status: Option<Value>,
    /// Why `Programmed` is `False`: the reason and a message saying what to do.
    pub problem: Option<(&'static str, String)>,
}

/// The addresses of a Gateway that asks for `requested`, served on what
/// `published` says (`None`: no publish Service is configured).
pub fn assign_addresses(
    requested: &[GatewayAddress],
    published: Option<&PublishedAddresses>,
) -> AddressAssignment {
    let Some(published) = published else {
        let problem = (!requested.is_empty()).then(|| {
            (
                "AddressNotUsable",
                format!(
                    "spec.addresses asks for {}, but hawser takes Gateway addresses from its publish Service and none is configured (--publish-service): remove spec.addresses, or configure one",
                    list(requested.iter().map(requested_text))
                ),
            )
        });
        return AddressAssignment {
            status: Some(Value::Null),
            problem,
        };
    };
    let service = &published.service;
    let assigned = match &published.state {
        ServiceAddresses::Unread => {
            return AddressAssignment {
                status: None,
                problem: None,
            };
        }
        ServiceAddresses::Missing => {
            return AddressAssignment {
                status: Some(Value::Null),
                problem: Some((
                    "AddressNotAssigned",
                    format!(
                        "the publish Service {service} does not exist: hawser gives every Gateway the load-balancer addresses of that Service"
                    ),
                )),
            };
        }
        ServiceAddresses::Assigned(assigned) => assigned,
    };
    let mut addresses: Vec<(&str, &str)> = Vec::new();
    for entry in assigned {
        let typed = [(IP_ADDRESS, &entry.ip), (HOSTNAME, &entry.hostname)];
        for (address_type, value) in typed {
            if let Some(value) = value.as_deref().filter(|v| !v.is_empty())
                && !addresses.contains(&(address_type, value))
            {
                addresses.push((address_type, value));
            }
        }
    }
    addresses.truncate(MAX_ADDRESSES);
    let status = if addresses.is_empty() {
        Value::Null
    } else {
        addresses
            .iter()
            .map(|(t, v)| json!({ "type": t, "value": v }))
            .collect()
    };
    AddressAssignment {
        status: Some(status),
        problem: problem(requested, &addresses, &published.service.to_string()),
    }
}

/// Why the Service's `addresses` do not honour `requested`, if they do not.
fn problem(
    requested: &[GatewayAddress],
    addresses: &[(&str, &str)],
    service: &str,
) -> Option<(&'static str, String)> {
    let has = list(addresses.iter().map(|(t, v)| format!("{t} {v}")));
    if addresses.is_empty() {
        return Some((
            "AddressNotAssigned",
            format!(
                "the publish Service {service} has no load-balancer address yet (its status.loadBalancer.ingress is empty)"
            ),
        ));
    }
    let mut unusable = Vec::new();
    let mut unassigned = Vec::new();
    for wanted in requested {
        let kind = wanted.address_type.as_str();
        if kind != IP_ADDRESS && kind != HOSTNAME {
            unusable.push(format!(
                "{} (hawser assigns only IPAddress and Hostname addresses)",
                requested_text(wanted)
            ));
        } else if wanted.value.is_empty() {
            if !addresses.iter().any(|(t, _)| *t == kind) {
                unassigned.push(format!("any {kind}"));
            }
        } else if !addresses.contains(&(kind, wanted.value.as_str())) {
            unusable.push(requested_text(wanted));
        }
    }
    if !unusable.is_empty() {
        return Some((
            "AddressNotUsable",
            format!(
                "{} cannot be used: hawser serves every Gateway on the addresses of its publish Service {service} ({has}); ask for one of those, or for none",
                list(unusable.into_iter())
            ),
        ));
    }
    if !unassigned.is_empty() {
        return Some((
            "AddressNotAssigned",
            format!(
                "spec.addresses asks for {}, but the publish Service {service} has none ({has})",
                list(unassigned.into_iter())
            ),
        ));
    }
    None
}

fn requested_text(address: &GatewayAddress) -> String {
    if address.value.is_empty() {
        format!("any {}", address.address_type)
    } else {
        format!("{} {}", address.address_type, address.value)
    }
}

fn list(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use hawser_model::ObjectKey;

    use super::*;
    use crate::addresses::LoadBalancerAddress;

    fn published(state: ServiceAddresses) -> PublishedAddresses {
        PublishedAddresses {
            service: ObjectKey::new("hawser", "haproxy"),
            state,
        }
    }

    fn assigned(ips: &[&str], hostnames: &[&str]) -> PublishedAddresses {
        let ips = ips.iter().map(|ip| LoadBalancerAddress {
            ip: Some(ip.to_string()),
            hostname: None,
        });
        let hostnames = hostnames.iter().map(|h| LoadBalancerAddress {
            ip: None,
            hostname: Some(h.to_string()),
        });
        published(ServiceAddresses::Assigned(ips.chain(hostnames).collect()))
    }

    fn asks(address_type: &str, value: &str) -> GatewayAddress {
        GatewayAddress {
            address_type: address_type.to_string(),
            value: value.to_string(),
        }
    }

    fn reason(assignment: &AddressAssignment) -> Option<&'static str> {
        assignment.problem.as_ref().map(|(reason, _)| *reason)
    }

    #[test]
    fn a_gateway_gets_the_publish_services_addresses_typed() {
        let service = assigned(&["203.0.113.7"], &["lb.example.com"]);
        let assignment = assign_addresses(&[], Some(&service));
        assert_eq!(
            assignment.status,
            Some(json!([
                {"type": "IPAddress", "value": "203.0.113.7"},
                {"type": "Hostname", "value": "lb.example.com"},
            ]))
        );
        assert_eq!(assignment.problem, None);
    }

    #[test]
    fn requested_addresses_are_honoured_only_when_the_service_has_them() {
        let service = assigned(&["203.0.113.7"], &[]);
        let honoured = [asks("IPAddress", "203.0.113.7"), asks("IPAddress", "")];
        assert_eq!(assign_addresses(&honoured, Some(&service)).problem, None);

        let other = assign_addresses(&[asks("IPAddress", "198.51.100.1")], Some(&service));
        assert_eq!(reason(&other), Some("AddressNotUsable"));
        let (_, message) = other.problem.unwrap();
        assert!(message.contains("IPAddress 198.51.100.1"), "{message}");
        assert!(
            message.contains("hawser/haproxy (IPAddress 203.0.113.7)"),
            "{message}"
        );
        // Still listed: HAProxy serves the Gateway on them.
        assert!(other.status.unwrap().is_array());

        let named = assign_addresses(&[asks("NamedAddress", "pool-a")], Some(&service));
        assert_eq!(reason(&named), Some("AddressNotUsable"));

        let hostname = assign_addresses(&[asks("Hostname", "")], Some(&service));
        assert_eq!(reason(&hostname), Some("AddressNotAssigned"));
    }

    #[test]
    fn no_address_yet_is_not_assigned_and_an_unread_service_changes_nothing() {
        let empty = assigned(&[], &[]);
        let assignment = assign_addresses(&[], Some(&empty));
        assert_eq!(assignment.status, Some(Value::Null));
        assert_eq!(reason(&assignment), Some("AddressNotAssigned"));

        let missing = assign_addresses(&[], Some(&published(ServiceAddresses::Missing)));
        assert_eq!(reason(&missing), Some("AddressNotAssigned"));

        let unread = assign_addresses(
            &[asks("IPAddress", "203.0.113.7")],
            Some(&published(ServiceAddresses::Unread)),
        );
        assert_eq!(unread.status, None);
        assert_eq!(unread.problem, None);
    }

    #[test]
    fn without_a_publish_service_no_address_is_listed_and_none_can_be_asked_for() {
        let plain = assign_addresses(&[], None);
        assert_eq!(plain.status, Some(Value::Null));
        assert_eq!(plain.problem, None);
        let asked = assign_addresses(&[asks("IPAddress", "203.0.113.7")], None);
        assert_eq!(reason(&asked), Some("AddressNotUsable"));
    }
}
