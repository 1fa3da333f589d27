//! `{{name}}`: a husk operation calling a service over `wasi:http` (with
//! `wstd`). Input `{"url": "https://api.example.com/..."}`, output
//! `{"status": 200, "body": "..."}`. A failed request is the fault
//! `http.error`, a 5xx answer `service.unavailable` (technical: husk
//! retries it, and every attempt's request carries the same
//! `Idempotency-Key: husk-<job id>-1`). The topic must allow the host
//! (`allowed_hosts` in husk.toml; `husk run --allow-host`).

// Generates `Guest`, `Job`, `Fault`, the `log` import and `export!`.
wit_bindgen::generate!({ path: "wit", world: "operation" });

use husk::worker::log::{Level, log};
use serde_json::{Value, json};
use wstd::http::{Body, Client, Request};

fn fault(code: &str, body: Value) -> Fault {
    Fault { code: code.into(), body: body.to_string().into_bytes() }
}

struct Operation;

impl Guest for Operation {
    fn execute(job: Job) -> Result<Vec<u8>, Fault> {
        let input: Value = serde_json::from_slice(&job.input).unwrap_or(Value::Null);
        let Some(url) = input["url"].as_str() else {
            return Err(fault("invalid-input", json!({ "error": "missing field `url`" })));
        };
        log(Level::Info, &format!("job {} (attempt {}): calling {url}", job.id, job.attempt));
        wstd::runtime::block_on(async {
            let request = Request::get(url)
                .body(Body::empty())
                .map_err(|e| fault("invalid-input", json!({ "error": e.to_string() })))?;
            let failed = |e: wstd::http::Error| fault("http.error", json!({ "error": format!("{e:#}") }));
            let mut response = Client::new().send(request).await.map_err(failed)?;
            let status = response.status().as_u16();
            let body = response.body_mut().contents().await.map_err(failed)?;
            let body = String::from_utf8_lossy(body).into_owned();
            if status >= 500 {
                return Err(fault("service.unavailable", json!({ "status": status, "body": body })));
            }
            Ok(json!({ "status": status, "body": body }).to_string().into_bytes())
        })
    }
}

export!(Operation);
