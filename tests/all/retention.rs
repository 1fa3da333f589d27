//! Retention and incidents through the real binary: an incident discarded
//! (API and CLI) ends for good and leaves the incident list; the cleaner
//! prunes ended jobs past their retention, and the outcome stream answers a
//! cursor below what was pruned with 410 and the oldest cursor, never by
//! skipping; the metrics count what was pruned. (The pruning rules over a
//! week of manual-clock time are the store conformance check
//! `retention_keeps_the_tables_bounded_over_a_week`.)

use std::process::Command;

use husk_server::tokens::token_hash;
use serde_json::{Value, json};

use crate::support::guest;
use crate::support_server::{Server, TOKEN_A, ended, enqueue, job_state, refusal};

fn config(retention: &str) -> String {
    format!(
        r#"store = "husk.db"
epoch_tick = "10ms"
shutdown_grace = "2s"

[retention]
{retention}

[tenants.a]
tokens = ["sha256:{hash}"]

[topics.quote]
tenant = "a"
plugin = "{quote}"
workers = 1
retry = {{ kind = "none" }}
"#,
        hash = token_hash(TOKEN_A),
        quote = guest("quote-v1").display(),
    )
}

/// Runs a quote; USD fails on v1 (an incident), EUR completes.
fn run(server: &Server, currency: &str) -> Value {
    let a = server.client(Some(TOKEN_A));
    let id = enqueue(&a, "quote", &json!({ "amount": 1, "currency": currency })).unwrap()["id"].clone();
    server.wait_until("the quote ends", |_| ended(&job_state(&a, &id)));
    id
}

fn incidents(server: &Server) -> Vec<Value> {
    let listed = server.client(Some(TOKEN_A)).get("/v1/incidents").unwrap();
    listed["incidents"].as_array().unwrap().iter().map(|i| i["id"].clone()).collect()
}

#[test]
fn a_discarded_incident_ends_for_good_through_the_api_and_the_cli() {
    // No pruning here: the discarded incident's outcome stays visible.
    let server = Server::start(&config("enabled = false"));
    let a = server.client(Some(TOKEN_A));
    let (first, second) = (run(&server, "USD"), run(&server, "USD"));
    assert_eq!(incidents(&server), [first.clone(), second.clone()]);

    let discarded = a.post(&format!("/v1/incidents/{first}/discard"), None, &[]).unwrap();
    assert_eq!(discarded["result"], "discarded");
    let again = a.post(&format!("/v1/incidents/{first}/discard"), None, &[]);
    assert_eq!(refusal(again), (409, "not-an-incident".to_owned()));
    let retried = a.post(&format!("/v1/incidents/{first}/retry"), None, &[]);
    assert_eq!(refusal(retried), (409, "not-an-incident".to_owned()), "a discarded incident cannot be retried");
    assert_eq!(incidents(&server), std::slice::from_ref(&second));
    assert_eq!(job_state(&a, &first)["outcome"]["kind"], "failed", "its outcome stays");
    // It says so: its state, the listing by state, `husk job`.
    assert_eq!(job_state(&a, &first)["state"], "discarded");
    let listed = |state: &str| -> Vec<Value> {
        let page = a.get(&format!("/v1/jobs?state={state}")).unwrap();
        page["jobs"].as_array().unwrap().iter().map(|j| j["id"].clone()).collect()
    };
    assert_eq!((listed("discarded"), listed("failed")), (vec![first.clone()], vec![second.clone()]));
    let out = Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(["job", &first.to_string(), "--server", &server.url, "--token", TOKEN_A])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("job {first}  topic quote  state discarded")), "{text}");

    let out = Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(["discard", &second.to_string(), "--server", &server.url, "--token", TOKEN_A])
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), format!("job {second}: discarded\n"));
    assert!(incidents(&server).is_empty());
    assert_eq!(refusal(a.post("/v1/incidents/999999/discard", None, &[])), (404, "not-found".to_owned()));
}

#[test]
fn pruned_outcomes_answer_an_old_cursor_with_410_and_the_oldest_cursor() {
    // Completed jobs kept 1 s, the cleaner every 50 ms; incidents stay.
    let server = Server::start(&config("completed = \"1s\"\nevery = \"50ms\""));
    let a = server.client(Some(TOKEN_A));
    let incident = run(&server, "USD");
    let completed: Vec<Value> = (0..3).map(|_| run(&server, "EUR")).collect();
    server.wait_until("the completed jobs are pruned", |_| {
        completed.iter().all(|id| a.get(&format!("/v1/jobs/{id}")).is_err())
    });
    assert_eq!(job_state(&a, &incident)["state"], "failed", "an open incident is kept");

    let gone = a.get("/v1/outcomes?after=0&wait=0s");
    assert_eq!(refusal(gone), (410, "cursor-gone".to_owned()));
    // The body names where to start again; from there nothing is missing.
    let (status, body) = get(&format!("{}/v1/outcomes?after=0&wait=0s", server.url), Some(TOKEN_A));
    assert_eq!(status, 410);
    let body: Value = serde_json::from_str(&body).unwrap();
    let oldest = body["oldest_cursor"].as_u64().expect("410 names the oldest cursor");
    assert!(oldest >= 4, "the last completed job was pruned: {body}");
    let page = a.get(&format!("/v1/outcomes?after={oldest}&wait=0s")).unwrap();
    assert_eq!(page["outcomes"], json!([]));

    // (The gauge is read from the status snapshot, published every second.)
    let url = format!("{}/metrics", server.url);
    server.wait_until("the metrics count the pruned outcomes", |_| {
        get(&url, None).1.lines().any(|l| l == "husk_pruned_rows{table=\"outcomes\"} 3")
    });
}

/// A plain GET: its status and body.
fn get(url: &str, token: Option<&str>) -> (u16, String) {
    let agent: ureq::Agent = ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut request = agent.get(url);
    if let Some(token) = token {
        request = request.header("Authorization", format!("Bearer {token}"));
    }
    let mut response = request.call().unwrap();
    (response.status().as_u16(), response.body_mut().read_to_string().unwrap())
}
