//! The HTTP API's request handling, through the in-process router of a
//! host with a memory store: any method, path, query, headers
//! (`Authorization`, `Idempotency-Key`, `Content-Type`) and body is
//! answered, never with a panic and never with a 5xx other than 503
//! `store-unavailable`.

use std::sync::{Arc, OnceLock};

use arbitrary::{Arbitrary, Unstructured};
use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request};
use http_body_util::BodyExt;
use husk::quota::Quota;
use husk::retry::RetryPolicySpec;
use husk::sandbox::CancelToken;
use husk::sandbox::Ending;
use husk::store::LockedJob;
use husk::worker::{Handled, Handler};
use husk::{Host, Topic};
use husk_server::api::{Api, BodyLimits, OutcomeFeed};
use husk_server::metrics::Metrics;
use husk_server::router;
use husk_server::tokens::Tenants;
use husk_server::tokens::token_hash;
use tower::ServiceExt;

const TOKEN: &str = "fuzz-token";

/// Echoes its input, or fails when the input says so.
struct Echo;

impl Handler for Echo {
    fn handle(&self, job: &LockedJob, _cancel: &CancelToken) -> Handled {
        let result = if job.input.starts_with(b"\"fail") {
            Ending::Fault(husk::fault::Fault::new("echo.fail", job.input.clone()))
        } else {
            Ending::Returned(job.input.clone())
        };
        Handled::new(result)
    }
}

fn app() -> &'static (Router, tokio::runtime::Runtime) {
    static APP: OnceLock<(Router, tokio::runtime::Runtime)> = OnceLock::new();
    APP.get_or_init(|| {
        let host = Host::builder()
            .quota("a", Quota::default().with_max_concurrent(Some(2)).with_max_queued(Some(50)))
            .topic(
                Topic::native("t", Arc::new(Echo)).with_tenant("a").with_workers(1).with_retry(RetryPolicySpec::None),
            )
            .topic(Topic::native("other", Arc::new(Echo)).with_tenant("b").with_workers(1))
            .build()
            .expect("building the host");
        let tenants = Tenants::new([(token_hash(TOKEN), "a".to_owned())]);
        let limits = BodyLimits { input: 4 << 10, plugin: 64 << 10, batch: 64 << 10 };
        let api = Api::new(Arc::new(host), tenants, Arc::new(Metrics::new()), Arc::new(OutcomeFeed::new()), limits);
        // Paused time: a long-poll's wait passes at once.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
        (router(Arc::new(api)), runtime)
    })
}

#[derive(Debug, Arbitrary)]
enum Path {
    Enqueue(String),
    Batch(String),
    Job(String),
    Cancel(String),
    Jobs,
    Incidents,
    Retry(String),
    Plugins(String),
    Rollback(String),
    Topics,
    Outcomes,
    Health,
    Metrics,
    Raw(String),
}

#[derive(Debug, Arbitrary)]
struct Input {
    method: u8,
    path: Path,
    query: Option<String>,
    token: Option<Option<String>>,
    idempotency_key: Option<String>,
    content_type: Option<String>,
    body: Vec<u8>,
}

impl Input {
    fn uri(&self) -> String {
        let path = match &self.path {
            Path::Enqueue(topic) => format!("/v1/topics/{topic}/jobs"),
            Path::Batch(topic) => format!("/v1/topics/{topic}/jobs/batch"),
            Path::Job(id) => format!("/v1/jobs/{id}"),
            Path::Cancel(id) => format!("/v1/jobs/{id}/cancel"),
            Path::Jobs => "/v1/jobs".into(),
            Path::Incidents => "/v1/incidents".into(),
            Path::Retry(id) => format!("/v1/incidents/{id}/retry"),
            Path::Plugins(topic) => format!("/v1/topics/{topic}/plugins"),
            Path::Rollback(topic) => format!("/v1/topics/{topic}/rollback"),
            Path::Topics => "/v1/topics".into(),
            Path::Outcomes => "/v1/outcomes".into(),
            Path::Health => "/healthz".into(),
            Path::Metrics => "/metrics".into(),
            Path::Raw(path) => path.clone(),
        };
        match &self.query {
            Some(query) => format!("{path}?{query}"),
            None => path,
        }
    }

    fn request(&self) -> Option<Request<Body>> {
        const METHODS: [Method; 5] = [Method::GET, Method::POST, Method::PUT, Method::DELETE, Method::HEAD];
        let mut request = Request::builder().method(METHODS[usize::from(self.method) % METHODS.len()].clone());
        request = request.uri(self.uri());
        match &self.token {
            None => {}
            Some(None) => request = request.header("authorization", format!("Bearer {TOKEN}")),
            Some(Some(raw)) => request = request.header("authorization", raw.as_str()),
        }
        if let Some(key) = &self.idempotency_key {
            request = request.header("idempotency-key", key.as_str());
        }
        if let Some(content_type) = &self.content_type {
            request = request.header("content-type", content_type.as_str());
        }
        // A URI or header the HTTP layer would not parse never reaches husk.
        request.body(Body::from(self.body.clone())).ok()
    }
}

/// Answers the request `data` makes (as `arbitrary` reads an [`Input`]
/// from it); panics when the answer breaks the promise above.
pub(crate) fn check(data: &[u8]) {
    let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) else { return };
    let Some(request) = input.request() else { return };
    let (router, runtime) = app();
    let (status, body) = runtime.block_on(async {
        let response = router.clone().oneshot(request).await.expect("the router is infallible");
        let status = response.status();
        (status, response.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default())
    });
    if status.is_server_error() {
        let error: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        assert!(
            status.as_u16() == 503 && error["error"] == "store-unavailable",
            "{status} for {input:?}: {}",
            String::from_utf8_lossy(&body)
        );
    }
}
