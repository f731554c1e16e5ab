//! ConfigMap view (`v1`): only the ones a setting names are read (the TCP
//! services map), and only their `data`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::ObjectKey;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigMap {
    pub key: ObjectKey,
    pub data: BTreeMap<String, String>,
}
