//! One file's text → its documents → objects, ignored kinds and problems.
//!
//! Each document is read twice with serde-saphyr: first its head (`apiVersion`,
//! `kind`, `metadata.name/namespace`) to choose the type, then the whole document
//! straight into that k8s-openapi type, so that shape errors keep their line.
//! `kind: List` items are typed in one pass over the list; an item that fails is
//! reported, skipped, and the pass rerun, so one bad item does not hide the rest.

use std::cell::Cell;
use std::fmt;
use std::path::Path;

use gateway_api::experimental::tcproutes::TcpRoute as K8sTcpRoute;
use gateway_api::gatewayclasses::GatewayClass as K8sGatewayClass;
use gateway_api::gateways::Gateway as K8sGateway;
use gateway_api::grpcroutes::GrpcRoute as K8sGrpcRoute;
use gateway_api::httproutes::HttpRoute as K8sHttpRoute;
use gateway_api::referencegrants::ReferenceGrant as K8sReferenceGrant;
use gateway_api::tlsroutes::TlsRoute as K8sTlsRoute;
use hawser_model::{
    ConfigMap, EndpointSlice, Gateway, GatewayClass, GrpcRoute, HttpRoute, Ingress, IngressClass,
    Kind, Namespace, Object, ObjectKey, ObjectRef, ReferenceGrant, Secret, Service, TcpRoute,
    TlsRoute,
};
use k8s_openapi::api::core::v1 as core;
use k8s_openapi::api::discovery::v1 as discovery;
use k8s_openapi::api::networking::v1 as networking;
use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{MessageFormatter, Spanned, UserMessageFormatter};

use super::split::{Chunk, split_documents};
use super::{Problem, ProblemKind};
use crate::{ConvertError, FromK8s};

/// What a file holds, in document order.
#[derive(Debug, Clone)]
pub(super) enum Entry {
    /// A converted object and the file line its document (or List item) starts on.
    Object {
        object: Object,
        line: u64,
    },
    /// A document of a kind hawser does not read.
    Ignored,
    Problem(Problem),
}

/// Reads every document of one file.
pub(super) fn parse_file(file: &Path, text: &str) -> Vec<Entry> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut entries = Vec::new();
    for chunk in split_documents(text) {
        let mut document = Document {
            file,
            chunk,
            entries: &mut entries,
        };
        document.parse();
    }
    entries
}

/// The fields that decide how a document (or List item) is read.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<HeadMeta>,
}

#[derive(Debug, Deserialize)]
struct HeadMeta {
    name: Option<String>,
    namespace: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ListHead {
    items: Option<Vec<Spanned<Head>>>,
}

/// What a head says the document is.
enum Typed {
    Known(Kind),
    List,
    Unknown,
    /// No `apiVersion` or no `kind`: not a Kubernetes object.
    Untyped(&'static str),
}

impl Head {
    fn typed(&self) -> Typed {
        match (self.api_version.as_deref(), self.kind.as_deref()) {
            (None, _) => Typed::Untyped("apiVersion"),
            (_, None) => Typed::Untyped("kind"),
            (Some(_), Some("List")) => Typed::List,
            (Some(api_version), Some(kind)) => match Kind::from_type_meta(api_version, kind) {
                Some(kind) => Typed::Known(kind),
                None => Typed::Unknown,
            },
        }
    }

    /// The object this head names, when it names one; used to label problems
    /// found before conversion.
    fn object_ref(&self, kind: Kind) -> Option<ObjectRef> {
        let meta = self.metadata.as_ref()?;
        let name = meta.name.as_deref().filter(|n| !n.is_empty())?;
        let key = if kind.is_cluster_scoped() {
            ObjectKey::cluster(name)
        } else {
            let namespace = meta.namespace.as_deref().filter(|n| !n.is_empty());
            ObjectKey::new(namespace.unwrap_or("default"), name)
        };
        Some(ObjectRef::new(kind, key))
    }
}

/// One chunk of a file being read, and where its entries go.
struct Document<'a> {
    file: &'a Path,
    chunk: Chunk<'a>,
    entries: &'a mut Vec<Entry>,
}

impl Document<'_> {
    fn parse(&mut self) {
        let head = match self.read::<Option<Spanned<Head>>>() {
            Ok(Some(head)) => head,
            // Empty, comment-only or null documents.
            Ok(None) => return,
            Err(err) => {
                let line = self.error_line(&err, self.chunk.first_line);
                let message = format!("malformed YAML: {}", message(&err));
                self.problem(line, None, ProblemKind::Malformed, message);
                return;
            }
        };
        let line = self.chunk.file_line(head.referenced.line());
        match head.value.typed() {
            Typed::Known(kind) => self.parse_object(kind, &head.value, line),
            Typed::List => self.parse_list(line),
            Typed::Unknown => self.entries.push(Entry::Ignored),
            Typed::Untyped(field) => {
                let message = format!("document has no {field}");
                self.problem(line, None, ProblemKind::Malformed, message);
            }
        }
    }

    fn parse_object(&mut self, kind: Kind, head: &Head, line: u64) {
        let typed = serde_saphyr::with_deserializer_from_str_with_options(
            self.chunk.text,
            options(),
            |de| ObjectSeed(kind).deserialize(de),
        );
        match typed {
            Ok(converted) => self.converted(converted, line),
            Err(err) => self.malformed(kind, head, &err, line),
        }
    }

    fn parse_list(&mut self, list_line: u64) {
        let items = match self.read::<ListHead>() {
            Ok(list) => list.items.unwrap_or_default(),
            Err(err) => {
                let line = self.error_line(&err, list_line);
                let message = format!("malformed List: {}", message(&err));
                self.problem(line, None, ProblemKind::Malformed, message);
                return;
            }
        };
        if items.is_empty() {
            return;
        }
        // What to type each item as; an item that fails is set to `None` (skipped).
        let mut plan: Vec<Option<Kind>> = Vec::with_capacity(items.len());
        let mut results: Vec<ItemResult> = Vec::with_capacity(items.len());
        for item in &items {
            let (kind, result) = match item.value.typed() {
                Typed::Known(kind) => (Some(kind), ItemResult::Pending),
                // Lists do not nest in kubectl output; a nested one is not read.
                Typed::List | Typed::Unknown => (None, ItemResult::Ignored),
                Typed::Untyped(field) => (None, ItemResult::Untyped(field)),
            };
            plan.push(kind);
            results.push(result);
        }
        loop {
            let current = Cell::new(usize::MAX);
            let seed = ListSeed {
                plan: &plan,
                current: &current,
            };
            let typed = serde_saphyr::with_deserializer_from_str_with_options(
                self.chunk.text,
                options(),
                |de| seed.deserialize(de),
            );
            match typed {
                Ok(converted) => {
                    for (index, result) in converted {
                        results[index] = ItemResult::Converted(result);
                    }
                    break;
                }
                Err(err) => {
                    let failed = current.get();
                    match plan.get_mut(failed).and_then(Option::take) {
                        // The item is now skipped: read the list again.
                        Some(kind) => results[failed] = ItemResult::Malformed(kind, err),
                        // Not in an item hawser reads (the head pass should have
                        // caught it): give up on the list rather than loop.
                        None => {
                            let line = self.error_line(&err, list_line);
                            let message = format!("malformed List: {}", message(&err));
                            self.problem(line, None, ProblemKind::Malformed, message);
                            return;
                        }
                    }
                }
            }
        }
        for (item, result) in items.iter().zip(results) {
            let line = self.chunk.file_line(item.referenced.line());
            match result {
                ItemResult::Converted(converted) => self.converted(converted, line),
                ItemResult::Malformed(kind, err) => self.malformed(kind, &item.value, &err, line),
                ItemResult::Untyped(field) => {
                    let message = format!("List item has no {field}");
                    self.problem(line, None, ProblemKind::Malformed, message);
                }
                ItemResult::Ignored => self.entries.push(Entry::Ignored),
                // Unreachable once the list pass succeeded; nothing to report.
                ItemResult::Pending => {}
            }
        }
    }

    fn converted(&mut self, converted: Result<Object, ConvertError>, line: u64) {
        match converted {
            Ok(object) => self.entries.push(Entry::Object { object, line }),
            Err(ConvertError::Invalid { kind, key, reason }) => {
                let object = Some(ObjectRef::new(kind, key));
                self.problem(line, object, ProblemKind::Invalid, reason);
            }
            Err(err @ ConvertError::MissingName { .. }) => {
                self.problem(line, None, ProblemKind::Invalid, err.to_string());
            }
        }
    }

    fn malformed(&mut self, kind: Kind, head: &Head, err: &serde_saphyr::Error, line: u64) {
        let object = head.object_ref(kind);
        let message = match object {
            Some(_) => format!("malformed manifest: {}", message(err)),
            None => format!("malformed {kind}: {}", message(err)),
        };
        let line = self.error_line(err, line);
        self.problem(line, object, ProblemKind::Malformed, message);
    }

    fn read<T: for<'de> Deserialize<'de>>(&self) -> Result<T, serde_saphyr::Error> {
        serde_saphyr::from_str_with_options(self.chunk.text, options())
    }

    /// The file line of a parser error, or `fallback` when the error has none
    /// (errors raised by a type's own `Deserialize`, such as a missing field).
    fn error_line(&self, err: &serde_saphyr::Error, fallback: u64) -> u64 {
        err.location()
            .map(|l| l.line())
            .filter(|&l| l > 0)
            .map_or(fallback, |l| self.chunk.file_line(l))
    }

    fn problem(
        &mut self,
        line: u64,
        object: Option<ObjectRef>,
        kind: ProblemKind,
        message: String,
    ) {
        self.entries.push(Entry::Problem(Problem {
            file: self.file.to_path_buf(),
            line: Some(line),
            object,
            kind,
            message,
        }));
    }
}

/// How one List item was read.
enum ItemResult {
    /// To be typed by the list pass.
    Pending,
    Converted(Result<Object, ConvertError>),
    Malformed(Kind, serde_saphyr::Error),
    Ignored,
    Untyped(&'static str),
}

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! { with_snippet: false }
}

/// The parser's message without its `at line L, column C` suffix: problems
/// carry the (file) line themselves.
fn message(err: &serde_saphyr::Error) -> String {
    UserMessageFormatter
        .format_message(err.without_snippet())
        .into_owned()
}

/// Deserializes one object of a known kind into its k8s-openapi type and
/// converts it to the model's view.
struct ObjectSeed(Kind);

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = Result<Object, ConvertError>;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        Ok(match self.0 {
            Kind::Ingress => {
                Ingress::from_k8s(&networking::Ingress::deserialize(de)?).map(Object::Ingress)
            }
            Kind::IngressClass => {
                IngressClass::from_k8s(&networking::IngressClass::deserialize(de)?)
                    .map(Object::IngressClass)
            }
            Kind::Service => {
                Service::from_k8s(&core::Service::deserialize(de)?).map(Object::Service)
            }
            Kind::EndpointSlice => {
                EndpointSlice::from_k8s(&discovery::EndpointSlice::deserialize(de)?)
                    .map(Object::EndpointSlice)
            }
            Kind::Secret => Secret::from_k8s(&core::Secret::deserialize(de)?).map(Object::Secret),
            Kind::ConfigMap => {
                ConfigMap::from_k8s(&core::ConfigMap::deserialize(de)?).map(Object::ConfigMap)
            }
            Kind::Namespace => {
                Namespace::from_k8s(&core::Namespace::deserialize(de)?).map(Object::Namespace)
            }
            Kind::GatewayClass => {
                GatewayClass::from_k8s(&K8sGatewayClass::deserialize(de)?).map(Object::GatewayClass)
            }
            Kind::Gateway => Gateway::from_k8s(&K8sGateway::deserialize(de)?).map(Object::Gateway),
            Kind::HttpRoute => {
                HttpRoute::from_k8s(&K8sHttpRoute::deserialize(de)?).map(Object::HttpRoute)
            }
            Kind::GrpcRoute => {
                GrpcRoute::from_k8s(&K8sGrpcRoute::deserialize(de)?).map(Object::GrpcRoute)
            }
            Kind::TlsRoute => {
                TlsRoute::from_k8s(&K8sTlsRoute::deserialize(de)?).map(Object::TlsRoute)
            }
            Kind::TcpRoute => {
                TcpRoute::from_k8s(&K8sTcpRoute::deserialize(de)?).map(Object::TcpRoute)
            }
            Kind::ReferenceGrant => ReferenceGrant::from_k8s(&K8sReferenceGrant::deserialize(de)?)
                .map(Object::ReferenceGrant),
        })
    }
}

/// Reads a `kind: List` document's `items`, typing those the plan names and
/// skipping the others. `current` tells which item a failure happened in.
#[derive(Clone, Copy)]
struct ListSeed<'a> {
    plan: &'a [Option<Kind>],
    current: &'a Cell<usize>,
}

type ListItems = Vec<(usize, Result<Object, ConvertError>)>;

impl<'de> DeserializeSeed<'de> for ListSeed<'_> {
    type Value = ListItems;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ListSeed<'_> {
    type Value = ListItems;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a List")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                items = map.next_value_seed(ItemsSeed(self))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(items)
    }
}

struct ItemsSeed<'a>(ListSeed<'a>);

impl<'de> DeserializeSeed<'de> for ItemsSeed<'_> {
    type Value = ListItems;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed<'_> {
    type Value = ListItems;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence of objects")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        for index in 0.. {
            self.0.current.set(index);
            match self.0.plan.get(index).copied().flatten() {
                Some(kind) => match seq.next_element_seed(ObjectSeed(kind))? {
                    Some(converted) => items.push((index, converted)),
                    None => break,
                },
                None => {
                    if seq.next_element::<IgnoredAny>()?.is_none() {
                        break;
                    }
                }
            }
        }
        Ok(items)
    }
}
