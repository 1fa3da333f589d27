//! `fetch` — calls a service over `wasi:http` (with the `wstd` crate).
//!
//! Input `{"url": "http://127.0.0.1:8089/price"}`, optionally `"method"`
//! (default `GET`), `"body"` (text), `"headers"` (an object of names and
//! values), `"repeat"` (send the request that many
//! times, default 1). Output `{"status": 200, "body": "…", "requests": 1}`
//! (the last response; the body as text, lossy UTF-8).
//!
//! Faults: a WASI HTTP error becomes `http.<error-code>` (e.g.
//! `http.http-request-denied` for a host the topic's `allowed_hosts` do not
//! name, `http.connection-read-timeout`), with the error in the body; a
//! response with a 5xx status becomes `fetch.server-error` (technical: the
//! topic's retry policy retries it, and husk sends the same
//! `Idempotency-Key` on every attempt).

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;
use serde_json::json;
use wstd::http::{Body, Client, Method, Request};

#[derive(Deserialize)]
struct Input {
    url: String,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    headers: std::collections::BTreeMap<String, String>,
    #[serde(default = "one")]
    repeat: u32,
}

fn one() -> u32 {
    1
}

struct Fetch;

impl Operation for Fetch {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        wstd::runtime::block_on(fetch(input))
    }
}

async fn fetch(input: Input) -> Result<Output, Fault> {
    let method = Method::from_bytes(input.method.as_deref().unwrap_or("GET").as_bytes())
        .map_err(|e| Fault::new(husk_guest::INVALID_INPUT, &json!({ "method": e.to_string() })))?;
    let client = Client::new();
    let mut last = None;
    for _ in 0..input.repeat.max(1) {
        let mut request = Request::builder().method(method.clone()).uri(&input.url);
        for (name, value) in &input.headers {
            request = request.header(name, value);
        }
        let request = request
            .body(Body::from(input.body.clone().unwrap_or_default()))
            .map_err(|e| Fault::new(husk_guest::INVALID_INPUT, &json!({ "url": e.to_string() })))?;
        let mut response = client.send(request).await.map_err(http_fault)?;
        let status = response.status().as_u16();
        let body = response.body_mut().contents().await.map_err(http_fault)?;
        let body = String::from_utf8_lossy(body).into_owned();
        if status >= 500 {
            return Err(Fault::new("fetch.server-error", &json!({ "status": status, "body": body })));
        }
        last = Some((status, body));
    }
    let (status, body) = last.unwrap_or_default();
    Output::json(&json!({ "status": status, "body": body, "requests": input.repeat.max(1) }))
}

/// `http.<error-code>`, the code in kebab case as the WIT names it; `http.error`
/// for an error that carries no WASI error code.
fn http_fault(error: wstd::http::Error) -> Fault {
    let code = match error.downcast_ref::<wstd::http::error::ErrorCode>() {
        Some(code) => kebab(&format!("{code:?}")),
        None => "error".to_owned(),
    };
    Fault::new(format!("http.{code}"), &json!({ "error": format!("{error:#}") }))
}

/// `ErrorCode::HttpRequestDenied` (or `DnsError(…)`) → `http-request-denied`.
fn kebab(debug: &str) -> String {
    let name = debug.strip_prefix("ErrorCode::").unwrap_or(debug);
    let name = name.split(['(', ' ', '{']).next().unwrap_or(name);
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

husk_guest::export_operation!(Fetch);
