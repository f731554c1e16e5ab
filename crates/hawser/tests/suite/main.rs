//! The tests of the `hawser` binary as a user runs it: end to end with real
//! processes (HAProxy, echo backends, agents), the command lines, the crate graph.
//!
//! One test binary per crate, one module per file: linking a binary per file
//! cost a build a gigabyte of disk and a minute of links for nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "tests fail by panicking"
)]

#[path = "../support/mod.rs"]
mod support;

mod certs_cli;
mod class_selection;
mod cluster_mode;
mod config_policy;
mod controller_cli;
mod crate_graph;
mod default_backend;
mod dialects;
mod gateway_backend_refs;
mod gateway_grpc;
mod gateway_grpc_endpoints;
mod gateway_https;
mod gateway_listener_ports;
mod gateway_map_routes;
mod gateway_matching;
mod gateway_redirect;
mod gateway_regex;
mod gateway_request_headers;
mod gateway_request_mirror;
mod gateway_response_headers;
mod gateway_rewrite;
mod gateway_routing;
mod gateway_tcp_route;
mod gateway_tls_passthrough;
mod gateway_weights;
mod gateway_with_ingress;
mod host_rules;
mod hostile_input;
mod ingress_features;
mod load_spread;
mod migrate_cli;
mod path_rules;
mod render_deterministic;
mod run_backend_features;
mod run_canary;
mod run_continuous_load;
mod run_crash_recovery;
mod run_disk_full;
mod run_drift;
mod run_endpoint_churn;
mod run_external_auth;
mod run_failpoints;
mod run_haproxy_crashes;
mod run_ingress_features;
mod run_old_workers;
mod run_outside_interference;
mod run_quarantine;
mod run_rejections;
mod run_reload_failures;
mod run_reloads_keep_traffic;
mod run_seed_000;
mod run_served_certificates;
mod run_spare_backends;
mod run_ssl_transaction;
mod run_stalled_log;
mod run_support_bundle;
mod run_tcp_services;
mod run_traffic_metrics;
mod run_upgrade_in_place;
mod split_attach;
mod split_clock_steps;
mod split_controller_gone;
mod split_mode;
mod split_tls;
mod status_cli;
mod stop_under_load;
mod test_cli;
mod tls_sni;
mod validate_cli;
