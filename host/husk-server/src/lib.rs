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

use std::sync::Arc;

use axum::Router;
use axum::routing::get;

/// Everything `husk serve` answers over HTTP: the API ([`api::routes`])
/// and the dashboard under `/ui`, which reads through the same [`api::Api`].
pub fn router(api: Arc<api::Api>) -> Router {
    api::routes(api.clone())
        .nest("/ui", ui::router(api))
        .route("/ui/", get(|| async { axum::response::Redirect::permanent("/ui") }))
}
