//! husk's integration tests: one binary, one module per concept, with the
//! shared helpers in `support`. Guest fixtures are the components in
//! `examples/`, built by `host/husk-cli/build.rs`.

#![allow(unreachable_pub, reason = "helpers of a test binary, shared between its modules")]

mod api;
mod batch;
mod binary;
mod blocking;
mod browser;
mod classify;
mod cli;
mod cluster_quota;
mod crash;
mod dispatch;
mod dispatch_props;
mod faults;
mod fuzz;
mod go_adapter;
mod guests;
mod host;
mod hostile;
mod languages;
mod leak;
mod migrate;
mod outbound;
mod pause;
mod periodic;
mod plugin;
mod pool;
mod quota;
mod retention;
mod retry;
mod returns;
mod rig;
mod scaffold;
mod serve;
mod store;
mod support;
mod support_http;
mod support_server;
mod support_sink;
mod swap;
mod timeout;
mod trust;
mod ui;
mod versions;
