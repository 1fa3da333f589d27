//! # husk-server
//!
//! `husk serve`: the topics of one `husk.toml` run on a [`husk::Host`], its
//! tenants authenticated by their API tokens, the HTTP API (axum) and
//! Prometheus metrics, until SIGINT or SIGTERM.

pub mod api;
pub mod config;
pub mod metrics;
pub mod recent;
pub mod serve;
pub mod tokens;
mod ui;
