//! The keys of the routes maps, shared by the Ingress routing table and the
//! Gateway API's map routes.

/// Ends an exact route's key, and every lookup key. It cannot occur in a
/// route's path (validated) and requests holding it are refused, so an exact
/// key matches only the whole path, while a prefix key (`<host><prefix>/`)
/// matches whatever follows.
pub const ROUTE_KEY_END: char = '|';
