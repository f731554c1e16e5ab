//! What the rendered configuration counts traffic in, for the agent's
//! metrics to read: both sides name it from here.

/// The stick table counting requests and responses per route, keyed by
/// `<kind>/<namespace>/<name>` (`Ingress/shop/web`). It stores
/// `http_req_cnt` and one general purpose counter per response class.
pub const ROUTES_TABLE: &str = "hawser_routes";

/// The response classes, in the order of the routes table's counters
/// (`gpc0` counts 1xx responses, ... `gpc5` any other status).
pub const RESPONSE_CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "other"];
