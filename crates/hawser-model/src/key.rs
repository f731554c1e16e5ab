//! Object identity: kind plus namespace/name.

use std::fmt;

use serde::Serialize;

/// The kinds hawser reads. Anything else a source meets is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Kind {
    Ingress,
    IngressClass,
    Service,
    EndpointSlice,
    Secret,
    Namespace,
    GatewayClass,
    Gateway,
    HttpRoute,
    GrpcRoute,
    TlsRoute,
    TcpRoute,
    ReferenceGrant,
    ConfigMap,
}

/// The API group of the Gateway API kinds.
pub const GATEWAY_API_GROUP: &str = "gateway.networking.k8s.io";

impl Kind {
    /// Maps a manifest's `apiVersion` and `kind` to a kind hawser reads.
    pub fn from_type_meta(api_version: &str, kind: &str) -> Option<Kind> {
        match (api_version, kind) {
            ("networking.k8s.io/v1", "Ingress") => Some(Kind::Ingress),
            ("networking.k8s.io/v1", "IngressClass") => Some(Kind::IngressClass),
            ("v1", "Service") => Some(Kind::Service),
            ("discovery.k8s.io/v1", "EndpointSlice") => Some(Kind::EndpointSlice),
            ("v1", "Secret") => Some(Kind::Secret),
            ("v1", "Namespace") => Some(Kind::Namespace),
            ("v1", "ConfigMap") => Some(Kind::ConfigMap),
            (version, kind) => {
                Kind::from_gateway_api(version.strip_prefix(GATEWAY_API_GROUP)?, kind)
            }
        }
    }

    /// Gateway API kinds, by the version after the group (`/v1`, `/v1beta1` ...).
    /// The versions the gateway-api types read are accepted: their schemas
    /// are the same across the versions listed.
    fn from_gateway_api(version: &str, kind: &str) -> Option<Kind> {
        match (version, kind) {
            ("/v1" | "/v1beta1", "GatewayClass") => Some(Kind::GatewayClass),
            ("/v1" | "/v1beta1", "Gateway") => Some(Kind::Gateway),
            ("/v1" | "/v1beta1", "HTTPRoute") => Some(Kind::HttpRoute),
            ("/v1" | "/v1alpha2", "GRPCRoute") => Some(Kind::GrpcRoute),
            ("/v1" | "/v1alpha3" | "/v1alpha2", "TLSRoute") => Some(Kind::TlsRoute),
            ("/v1alpha2", "TCPRoute") => Some(Kind::TcpRoute),
            ("/v1" | "/v1beta1", "ReferenceGrant") => Some(Kind::ReferenceGrant),
            _ => None,
        }
    }

    /// The `apiVersion` objects of this kind are served under.
    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Ingress | Kind::IngressClass => "networking.k8s.io/v1",
            Kind::Service | Kind::Secret => "v1",
            Kind::EndpointSlice => "discovery.k8s.io/v1",
            Kind::Namespace | Kind::ConfigMap => "v1",
            Kind::GatewayClass | Kind::Gateway | Kind::HttpRoute | Kind::GrpcRoute => {
                "gateway.networking.k8s.io/v1"
            }
            Kind::ReferenceGrant => "gateway.networking.k8s.io/v1beta1",
            Kind::TlsRoute | Kind::TcpRoute => "gateway.networking.k8s.io/v1alpha2",
        }
    }

    /// Cluster-scoped kinds have keys with an empty namespace.
    pub fn is_cluster_scoped(self) -> bool {
        matches!(
            self,
            Kind::IngressClass | Kind::GatewayClass | Kind::Namespace
        )
    }

    /// Every kind, in declaration order.
    pub const ALL: [Kind; 14] = [
        Kind::Ingress,
        Kind::IngressClass,
        Kind::Service,
        Kind::EndpointSlice,
        Kind::Secret,
        Kind::Namespace,
        Kind::GatewayClass,
        Kind::Gateway,
        Kind::HttpRoute,
        Kind::GrpcRoute,
        Kind::TlsRoute,
        Kind::TcpRoute,
        Kind::ReferenceGrant,
        Kind::ConfigMap,
    ];

    /// The kind [`Kind::as_str`] names (`HTTPRoute`).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Ingress => "Ingress",
            Kind::IngressClass => "IngressClass",
            Kind::Service => "Service",
            Kind::EndpointSlice => "EndpointSlice",
            Kind::Secret => "Secret",
            Kind::Namespace => "Namespace",
            Kind::GatewayClass => "GatewayClass",
            Kind::Gateway => "Gateway",
            Kind::HttpRoute => "HTTPRoute",
            Kind::GrpcRoute => "GRPCRoute",
            Kind::TlsRoute => "TLSRoute",
            Kind::TcpRoute => "TCPRoute",
            Kind::ReferenceGrant => "ReferenceGrant",
            Kind::ConfigMap => "ConfigMap",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Namespace and name. Cluster-scoped objects (IngressClass) have an empty namespace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObjectKey {
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A cluster-scoped key.
    pub fn cluster(name: impl Into<String>) -> Self {
        ObjectKey::new("", name)
    }
}

/// Names come from manifests and may hold anything until validated: control
/// characters are escaped so a name can never forge a line of output or logs.
impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.namespace.is_empty() {
            write_escaped(f, &self.namespace)?;
            f.write_str("/")?;
        }
        write_escaped(f, &self.name)
    }
}

fn write_escaped(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    for c in text.chars() {
        if c.is_control() {
            write!(f, "{}", c.escape_default())?;
        } else {
            f.write_fmt(format_args!("{c}"))?;
        }
    }
    Ok(())
}

/// A kind and key together: how errors and rejections name an object
/// (`Ingress app/web`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct ObjectRef {
    pub kind: Kind,
    pub key: ObjectKey,
}

impl ObjectRef {
    pub fn new(kind: Kind, key: ObjectKey) -> Self {
        ObjectRef { kind, key }
    }

    /// Reads the object a text begins with, as [`ObjectRef`]'s `Display`
    /// writes it (`Service app/web`, `IngressClass hawser`), ignoring what
    /// follows a space (`Service app/web port 80`).
    pub fn parse_prefix(text: &str) -> Option<ObjectRef> {
        let (kind, rest) = text.split_once(' ')?;
        let kind = Kind::from_name(kind)?;
        let key = rest.split(' ').next()?;
        let key = if kind.is_cluster_scoped() {
            ObjectKey::cluster(key)
        } else {
            let (namespace, name) = key.split_once('/')?;
            ObjectKey::new(namespace, name)
        };
        let valid = |part: &str| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        };
        (valid(&key.name) && (kind.is_cluster_scoped() || valid(&key.namespace)))
            .then(|| ObjectRef::new(kind, key))
    }
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_refs_read_back_what_display_writes() {
        let service = ObjectRef::new(Kind::Service, ObjectKey::new("app", "web"));
        let text = format!("{service} port 80");
        assert_eq!(ObjectRef::parse_prefix(&text), Some(service));
        let class = ObjectRef::new(Kind::IngressClass, ObjectKey::cluster("hawser"));
        assert_eq!(ObjectRef::parse_prefix(&class.to_string()), Some(class));
        for kind in Kind::ALL {
            assert_eq!(Kind::from_name(kind.as_str()), Some(kind));
        }
        assert_eq!(ObjectRef::parse_prefix("hawser, the health listener"), None);
        assert_eq!(ObjectRef::parse_prefix("Service app web"), None);
        assert_eq!(ObjectRef::parse_prefix("Service App/web"), None);
    }

    #[test]
    fn display_escapes_control_characters() {
        let key = ObjectKey::new("evil\nrejected: ns", "a\tb");
        assert_eq!(key.to_string(), "evil\\nrejected: ns/a\\tb");
        assert_eq!(ObjectKey::cluster("hawser").to_string(), "hawser");
    }

    #[test]
    fn gateway_api_kinds_by_type_meta() {
        let kind = |v: &str, k: &str| Kind::from_type_meta(v, k);
        let group = GATEWAY_API_GROUP;
        assert_eq!(
            kind(&format!("{group}/v1"), "HTTPRoute"),
            Some(Kind::HttpRoute)
        );
        assert_eq!(
            kind(&format!("{group}/v1beta1"), "ReferenceGrant"),
            Some(Kind::ReferenceGrant)
        );
        assert_eq!(
            kind(&format!("{group}/v1"), "ReferenceGrant"),
            Some(Kind::ReferenceGrant)
        );
        assert_eq!(
            kind(&format!("{group}/v1alpha2"), "TCPRoute"),
            Some(Kind::TcpRoute)
        );
        assert_eq!(
            kind(&format!("{group}/v1alpha2"), "TLSRoute"),
            Some(Kind::TlsRoute)
        );
        assert_eq!(kind(&format!("{group}/v1"), "TCPRoute"), None);
        assert_eq!(kind("example.com/v1", "Gateway"), None);
        assert_eq!(kind("v1", "Namespace"), Some(Kind::Namespace));
        for k in [
            Kind::GatewayClass,
            Kind::Gateway,
            Kind::TlsRoute,
            Kind::ReferenceGrant,
        ] {
            assert_eq!(kind(k.api_version(), k.as_str()), Some(k), "{k}");
        }
        assert!(Kind::GatewayClass.is_cluster_scoped());
        assert!(!Kind::Gateway.is_cluster_scoped());
    }
}
