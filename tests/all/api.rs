//! The HTTP API through a real HTTP server (served inside the test process;
//! a `husk serve` process where a test needs its log): tenant isolation
//! (every cross-tenant read, enqueue, deploy, cancel and retry refused),
//! every class of bad request with its documented status and error body
//! (and the store unchanged afterwards), the quota on queued jobs, the
//! outcome stream's cursor, idempotency keys, hot swap by deploy and by
//! `--watch`, a cancel that kills a running job, and the CLI client.
//!
//! The tests wait for the server to make progress by polling the API
//! (every 20 ms, up to a generous limit) and assert on what it answers.

use std::process::Command;
use std::time::Duration;

use husk_cli::client::ClientError;
use serde_json::{Value, json};

use crate::serve::start_error;
use crate::support::guest;
use crate::support_server::{Server, TOKEN_A, TOKEN_B, TOKEN_Q, config, ended, enqueue, job_state, refusal};

#[test]
fn tenant_isolation_through_the_http_server() {
    let server = Server::start(&config());
    let (a, b) = (server.client(Some(TOKEN_A)), server.client(Some(TOKEN_B)));
    let a_job = enqueue(&a, "a-quote", &json!({ "amount": 5, "currency": "EUR" })).unwrap()["id"].clone();
    // b's job fails once, with no retry: an open incident of tenant b.
    let b_job = enqueue(&b, "b-flaky", &json!({ "succeed_on_attempt": 2 })).unwrap()["id"].clone();
    server.wait_until("both jobs end", |_| ended(&job_state(&a, &a_job)) && ended(&job_state(&b, &b_job)));
    assert_eq!(b.get("/v1/incidents").unwrap()["incidents"][0]["id"], b_job);

    // A valid component, padded to 3 MiB (under the 4 MiB limit): the
    // refusal must reach a client that sends all of it first.
    let mut quote_v2 = std::fs::read(guest("quote-v2")).unwrap();
    quote_v2.resize(3 << 20, 0);
    let cross: Vec<(&str, Result<Value, ClientError>, &str)> = vec![
        ("read b's job", a.get(&format!("/v1/jobs/{b_job}")), "not-found"),
        ("enqueue on b's topic", enqueue(&a, "b-flaky", &json!({ "succeed_on_attempt": 1 })), "unknown-topic"),
        (
            "deploy to b's topic",
            a.post("/v1/topics/b-flaky/plugins", Some((&quote_v2, "application/wasm")), &[]),
            "unknown-topic",
        ),
        ("list b's versions", a.get("/v1/topics/b-flaky/plugins"), "unknown-topic"),
        ("roll back b's topic", a.post("/v1/topics/b-flaky/rollback", None, &[]), "unknown-topic"),
        ("retry b's incident", a.post(&format!("/v1/incidents/{b_job}/retry"), None, &[]), "not-found"),
        ("cancel b's job", a.post(&format!("/v1/jobs/{b_job}/cancel"), None, &[]), "not-found"),
        ("list b's topic", a.get("/v1/jobs?topic=b-flaky"), "unknown-topic"),
        ("b reads a's job", b.get(&format!("/v1/jobs/{a_job}")), "not-found"),
    ];
    for (what, result, kind) in cross {
        assert_eq!(refusal(result), (404, kind.to_owned()), "{what}");
    }
    // What a tenant lists is its own.
    let a_jobs = a.get("/v1/jobs").unwrap()["jobs"].clone();
    assert_eq!(a_jobs.as_array().unwrap().iter().map(|j| j["id"].clone()).collect::<Vec<_>>(), vec![a_job.clone()]);
    assert_eq!(a.get("/v1/incidents").unwrap()["incidents"], json!([]));
    let a_outcomes = a.get("/v1/outcomes?after=0&wait=0s").unwrap();
    let seen: Vec<Value> = a_outcomes["outcomes"].as_array().unwrap().iter().map(|o| o["job_id"].clone()).collect();
    assert_eq!(seen, vec![a_job.clone()]);
    let topics: Vec<Value> =
        a.get("/v1/topics").unwrap()["topics"].as_array().unwrap().iter().map(|t| t["topic"].clone()).collect();
    assert_eq!(topics, vec![json!("a-quote"), json!("a-spin")]);
    // Nothing of b's changed: its incident is still open, on its version.
    assert_eq!(b.get("/v1/incidents").unwrap()["incidents"][0]["id"], b_job);
    let versions = b.get("/v1/topics/b-flaky/plugins").unwrap()["versions"].clone();
    assert_eq!(versions.as_array().unwrap().len(), 1);
    // No token, or a wrong one: 401 whatever the endpoint.
    assert_eq!(refusal(server.client(None).get("/v1/jobs")), (401, "unauthorized".to_owned()));
    assert_eq!(
        refusal(server.client(Some("nope")).get(&format!("/v1/jobs/{a_job}"))),
        (401, "unauthorized".to_owned())
    );
}

/// Everything a tenant can see, to compare before and after refused calls.
pub fn visible_state(server: &Server) -> Value {
    let mut state = json!({});
    for (token, topic) in [(TOKEN_A, "a-quote"), (TOKEN_Q, "q-flaky")] {
        let client = server.client(Some(token));
        let jobs: Vec<Value> = client.get("/v1/jobs?limit=1000").unwrap()["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| json!([j["id"], j["state"], j["attempt"], j["attempts"], j["outcome"]]))
            .collect();
        let versions = client.get(&format!("/v1/topics/{topic}/plugins")).unwrap()["versions"].clone();
        let incidents = client.get("/v1/incidents").unwrap()["incidents"].clone();
        state[topic] = json!({ "jobs": jobs, "versions": versions, "incidents": incidents });
    }
    state
}

#[test]
fn every_bad_request_gets_its_status_and_error_and_changes_nothing() {
    let server = Server::start(&config());
    let (a, q) = (server.client(Some(TOKEN_A)), server.client(Some(TOKEN_Q)));
    // Tenant q fills its max_queued (3) with jobs gated for an hour.
    let gated: Vec<Value> =
        (0..3).map(|_| enqueue(&q, "q-flaky", &json!({ "succeed_on_attempt": 9 })).unwrap()["id"].clone()).collect();
    server.wait_until("q's jobs are gated", |_| gated.iter().all(|id| job_state(&q, id)["state"] == "retrying"));
    let done = enqueue(&a, "a-quote", &json!({ "amount": 1, "currency": "EUR" })).unwrap()["id"].clone();
    server.wait_until("a's job ends", |_| ended(&job_state(&a, &done)));
    let before = visible_state(&server);

    let big = json!({ "text": "x".repeat(2048) });
    let garbage = vec![0u8; 5 << 20];
    let json_body = |text: &'static str| Some((text.as_bytes(), "application/json"));
    let long_key = "k".repeat(300);
    let cases: Vec<(&str, Result<Value, ClientError>, u16, &str)> = vec![
        ("malformed JSON", a.post("/v1/topics/a-quote/jobs", json_body("{\"amount\": "), &[]), 400, "malformed-json"),
        ("unknown topic", enqueue(&a, "nope", &json!({})), 404, "unknown-topic"),
        ("input over max_input_size", enqueue(&a, "a-quote", &big), 413, "payload-too-large"),
        ("past max_queued", enqueue(&q, "q-flaky", &json!({ "succeed_on_attempt": 1 })), 429, "quota-exceeded"),
        ("no token", server.client(None).post("/v1/topics/a-quote/jobs", json_body("{}"), &[]), 401, "unauthorized"),
        (
            "unknown token",
            server.client(Some("x")).post("/v1/topics/a-quote/jobs", json_body("{}"), &[]),
            401,
            "unauthorized",
        ),
        (
            "idempotency key too long",
            a.post("/v1/topics/a-quote/jobs", json_body("{}"), &[("Idempotency-Key", &long_key)]),
            400,
            "bad-request",
        ),
        (
            "a run_at that is no time",
            a.post("/v1/topics/a-quote/jobs?run_at=tomorrow", json_body("{}"), &[]),
            400,
            "bad-request",
        ),
        ("a negative delay", a.post("/v1/topics/a-quote/jobs?delay=-5s", json_body("{}"), &[]), 400, "bad-request"),
        (
            "both run_at and delay",
            a.post("/v1/topics/a-quote/jobs?delay=5s&run_at=2030-01-01T00:00:00Z", json_body("{}"), &[]),
            400,
            "bad-request",
        ),
        ("a misspelt delay", a.post("/v1/topics/a-quote/jobs?dealy=5s", json_body("{}"), &[]), 400, "bad-request"),
        (
            "a priority too high",
            a.post("/v1/topics/a-quote/jobs?priority=101", json_body("{}"), &[]),
            400,
            "bad-request",
        ),
        (
            "a priority not a number",
            a.post("/v1/topics/a-quote/jobs?priority=hi", json_body("{}"), &[]),
            400,
            "bad-request",
        ),
        (
            "a batch job with a priority too low",
            a.post("/v1/topics/a-quote/jobs/batch", json_body(r#"[{"input": {}, "priority": -101}]"#), &[]),
            400,
            "bad-request",
        ),
        (
            "a batch job with a bad delay",
            a.post(
                "/v1/topics/a-quote/jobs/batch",
                json_body(r#"[{"input": {}}, {"input": {}, "delay": "soon"}]"#),
                &[],
            ),
            400,
            "bad-request",
        ),
        ("job id not a number", a.get("/v1/jobs/abc"), 400, "bad-request"),
        ("unknown job", a.get("/v1/jobs/999999"), 404, "not-found"),
        ("cancel unknown job", a.post("/v1/jobs/999999/cancel", None, &[]), 404, "not-found"),
        ("unknown state in query", a.get("/v1/jobs?state=sleeping"), 400, "bad-request"),
        ("unknown query key", a.get("/v1/jobs?colour=red"), 400, "bad-request"),
        ("bad long-poll wait", a.get("/v1/outcomes?wait=soon"), 400, "bad-request"),
        (
            "retry a job that is not an incident",
            q.post(&format!("/v1/incidents/{}/retry", gated[0]), None, &[]),
            409,
            "not-an-incident",
        ),
        (
            "deploy something that is not a component",
            a.post("/v1/topics/a-quote/plugins", Some((b"not wasm", "application/wasm")), &[]),
            422,
            "invalid-plugin",
        ),
        (
            "deploy over max_plugin_size",
            a.post("/v1/topics/a-quote/plugins", Some((&garbage, "application/wasm")), &[]),
            413,
            "payload-too-large",
        ),
        ("roll back with no earlier version", a.post("/v1/topics/a-quote/rollback", None, &[]), 409, "no-rollback"),
        (
            "roll back with malformed JSON",
            a.post("/v1/topics/a-quote/rollback", json_body("{version"), &[]),
            400,
            "malformed-json",
        ),
        ("unknown endpoint", a.get("/v1/nothing-here"), 404, "not-found"),
        ("a method the endpoint does not take", a.get("/v1/topics/a-quote/jobs"), 405, "method-not-allowed"),
        (
            "a batch that is JSON but not an array",
            a.post("/v1/topics/a-quote/jobs/batch", json_body("{\"input\": 1}"), &[]),
            400,
            "invalid-body",
        ),
        (
            "a batch that is not JSON",
            a.post("/v1/topics/a-quote/jobs/batch", json_body("[{"), &[]),
            400,
            "malformed-json",
        ),
        (
            "a rollback body of the wrong shape",
            a.post("/v1/topics/a-quote/rollback", json_body("[1]"), &[]),
            400,
            "invalid-body",
        ),
        (
            "an empty deploy",
            a.post("/v1/topics/a-quote/plugins", Some((b"", "application/wasm")), &[]),
            422,
            "invalid-plugin",
        ),
        ("a page of no jobs", a.get("/v1/jobs?limit=0"), 400, "bad-request"),
        ("an outcome page over its limit", a.get("/v1/outcomes?limit=1001&wait=0s"), 400, "bad-request"),
        ("an outcome cursor past the head", a.get("/v1/outcomes?after=1000000&wait=0s"), 409, "cursor-ahead"),
        (
            "an outcome cursor past any store's",
            a.get("/v1/outcomes?after=9223372036854775808&wait=0s"),
            409,
            "cursor-ahead",
        ),
    ];
    for (what, result, status, kind) in cases {
        assert_eq!(refusal(result), (status, kind.to_owned()), "{what}");
    }
    assert_eq!(visible_state(&server), before, "a refused request changed the store");
}

#[test]
fn idempotency_keys_outcome_cursor_and_deploy_through_the_api() {
    let server = Server::start(&config());
    let a = server.client(Some(TOKEN_A));
    let usd = json!({ "amount": 10, "currency": "USD" }).to_string();
    let key = [("Idempotency-Key", "order-17")];
    let first = a.post("/v1/topics/a-quote/jobs", Some((usd.as_bytes(), "application/json")), &key).unwrap();
    let again = a.post("/v1/topics/a-quote/jobs", Some((usd.as_bytes(), "application/json")), &key).unwrap();
    assert_eq!((first["created"].clone(), again["created"].clone()), (json!(true), json!(false)));
    assert_eq!(first["id"], again["id"]);
    let id = first["id"].clone();
    // Version 1 cannot price USD: with no retry the job is an incident.
    server.wait_until("the USD job fails", |_| ended(&job_state(&a, &id)));
    let v1 = a.get("/v1/topics/a-quote/plugins").unwrap()["versions"][0]["version"].clone();
    let page = a.get("/v1/outcomes?after=0&wait=0s").unwrap();
    assert_eq!(page["outcomes"][0]["kind"], "failed");
    let cursor = page["cursor"].clone();

    let deployed = a
        .post("/v1/topics/a-quote/plugins", Some((&std::fs::read(guest("quote-v2")).unwrap(), "application/wasm")), &[])
        .unwrap();
    assert_ne!(deployed["version"], v1);
    assert_eq!(a.post(&format!("/v1/incidents/{id}/retry"), None, &[]).unwrap()["result"], "requeued");
    // The long-poll returns the retried job's new outcome, after the cursor.
    let page = a.get(&format!("/v1/outcomes?after={cursor}&wait=30s")).unwrap();
    let outcome = &page["outcomes"][0];
    assert_eq!((outcome["job_id"].clone(), outcome["kind"].clone()), (id.clone(), json!("completed")));
    assert_eq!(outcome["output"]["version"], "v2");
    assert_eq!(a.get("/v1/incidents").unwrap()["incidents"], json!([]));
    // Its attempts record the version that ran each.
    let job = job_state(&a, &id);
    let versions: Vec<Value> =
        job["attempts"].as_array().unwrap().iter().map(|a| a["plugin_version"].clone()).collect();
    assert_eq!(versions, vec![v1.clone(), deployed["version"].clone()]);
    // Roll back: version 1 is current again.
    assert_eq!(a.post("/v1/topics/a-quote/rollback", None, &[]).unwrap()["version"], v1);
    // The metrics name the current version and count the outcomes (the
    // outcome sink counts them just after the store has them).
    let url = format!("{}/metrics", server.url);
    server.wait_until("the metrics count both jobs", |_| {
        let metrics = reqwest_text(&url);
        ["completed", "failed"]
            .iter()
            .all(|outcome| metrics.contains(&format!("husk_jobs_total{{topic=\"a-quote\",outcome=\"{outcome}\"}} 1")))
    });
    let metrics = reqwest_text(&url);
    assert!(metrics.contains(&format!("husk_plugin_version{{topic=\"a-quote\",version={v1}}} 1")), "{metrics}");
}

/// A plain GET returning the body as text (`/metrics` is not JSON).
fn reqwest_text(url: &str) -> String {
    let output = Command::new("curl").args(["-sf", url]).output().unwrap();
    assert!(output.status.success(), "curl {url} failed");
    String::from_utf8(output.stdout).unwrap()
}

/// A config whose topic names a tenant absent from the file, or is above
/// its tenant's ceiling, is refused at start naming the key.
#[test]
fn a_topic_above_its_tenants_ceiling_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |text: &str| start_error(dir.path(), text, &[("HUSK_TEST_TOKEN_B", TOKEN_B)]);
    let mapper = format!("mapper = \"{}\"\nmapper_deadline = \"31s\"", guest("mapper").display());
    let cases = [
        ("memory = \"128MiB\"", "topics.a-quote.memory"),
        ("deadline = \"1m\"", "topics.a-quote.deadline"),
        ("fuel = 10", "topics.a-quote.fuel"),
        (mapper.as_str(), "topics.a-quote.mapper_deadline"),
    ];
    for (line, key) in cases {
        let text = config()
            .replace("max_memory = \"64MiB\"", "max_memory = \"64MiB\"\nmax_deadline = \"30s\"\nmax_fuel = 5")
            .replace("[topics.a-quote]\n", &format!("[topics.a-quote]\n{line}\n"));
        let error = refused(&text);
        assert!(error.contains(key) && error.contains("ceiling"), "{line}: {error}");
    }
    // Outbound HTTP: a topic allowing a host outside its tenant's ceiling.
    let ceiling = "max_memory = \"64MiB\"\nallowed_hosts = [\"https://*.example.com\"]";
    for (line, key) in [
        ("allowed_hosts = [\"https://api.example.com\", \"https://example.org\"]", "topics.a-quote.allowed_hosts[1]"),
        ("allowed_hosts = [\"http://api.example.com\"]", "topics.a-quote.allowed_hosts[0]"),
    ] {
        let text = config()
            .replace("max_memory = \"64MiB\"", ceiling)
            .replace("[topics.a-quote]\n", &format!("[topics.a-quote]\n{line}\n"));
        let error = refused(&text);
        assert!(error.contains(key) && error.contains("not within tenant `a`"), "{line}: {error}");
    }
    // Bad entries, HTTP settings without a grant, secrets that cannot be
    // read: each named.
    for (line, key, why) in [
        ("allowed_hosts = [\"ftp://x\"]", "topics.a-quote.allowed_hosts[0]", "https://"),
        ("http_timeout = \"5s\"", "topics.a-quote.http_timeout", "allowed_hosts"),
        ("secrets = { api_key = \"sk_live_x\" }", "topics.a-quote.secrets.api_key", "env:"),
        (
            "secrets = { api_key = \"env:HUSK_TEST_UNSET_SECRET\" }",
            "topics.a-quote.secrets.api_key",
            "HUSK_TEST_UNSET_SECRET",
        ),
        ("secrets = { api_key = \"file:no-such-file\" }", "topics.a-quote.secrets.api_key", "no-such-file"),
    ] {
        let error = refused(&config().replace("[topics.a-quote]\n", &format!("[topics.a-quote]\n{line}\n")));
        assert!(error.contains(key) && error.contains(why), "{line}: {error}");
        assert!(
            !error.contains("sk_live_x"),
            "a value written where a secret reference belongs is not echoed: {error}"
        );
    }
    let error = refused(&config().replace("tenant = \"a\"", "tenant = \"z\""));
    assert!(error.contains("topics.a-quote.tenant") && error.contains("no tenant `z`"), "{error}");
    let error = refused(&config().replace("sha256:", "plain:"));
    assert!(error.contains("tenants.a.tokens[0]") && error.contains("never the token itself"), "{error}");
}

#[test]
fn cancelling_a_running_job_kills_it() {
    let server = Server::start(&config());
    let a = server.client(Some(TOKEN_A));
    let id = enqueue(&a, "a-spin", &json!({})).unwrap()["id"].clone();
    server.wait_until("the spin job runs", |_| job_state(&a, &id)["state"] == "running");
    assert_eq!(a.post(&format!("/v1/jobs/{id}/cancel"), None, &[]).unwrap()["result"], "cancelling");
    // Killed at its next epoch tick, long before its 30 s deadline: the
    // wait below would give up first.
    server.wait_until("the spin job ends", |_| ended(&job_state(&a, &id)));
    let job = job_state(&a, &id);
    assert_eq!(job["outcome"]["kind"], "cancelled");
    assert_eq!(a.post(&format!("/v1/jobs/{id}/cancel"), None, &[]).unwrap()["result"], "already-ended");
}

#[test]
fn watch_deploys_a_changed_plugin_file_and_refuses_a_broken_one() {
    let dir = tempfile::tempdir().unwrap();
    let plugin = dir.path().join("quote.wasm");
    std::fs::copy(guest("quote-v1"), &plugin).unwrap();
    let text = config().replace(&guest("quote-v1").display().to_string(), &plugin.display().to_string());
    let server = Server::process_in(dir, &text, &["--watch"]);
    let a = server.client(Some(TOKEN_A));
    let versions = || a.get("/v1/topics/a-quote/plugins").unwrap()["versions"].clone();
    let v1 = versions()[0]["version"].clone();
    // A broken file is refused; the current version stays.
    std::fs::write(&plugin, b"half-written").unwrap();
    server.wait_until("the broken file is refused", |s| s.log().contains("the changed plugin was refused"));
    assert_eq!(versions().as_array().unwrap().len(), 1);
    // A new version is deployed, and the next jobs run on it.
    std::fs::copy(guest("quote-v2"), &plugin).unwrap();
    server.wait_until("the new file is deployed", |_| versions()[0]["origin"] == "watch");
    let v2 = versions()[0]["version"].clone();
    assert_ne!(v2, v1);
    // The store lists a deploy before this process swaps it in: the next
    // jobs run on it once the process says it runs it.
    let running = || {
        let topics = a.get("/v1/topics").unwrap()["topics"].as_array().unwrap().clone();
        topics.into_iter().find(|t| t["topic"] == "a-quote").unwrap()["version"].clone()
    };
    server.wait_until("the process runs the new version", |_| running() == v2);
    let id = enqueue(&a, "a-quote", &json!({ "amount": 1, "currency": "USD" })).unwrap()["id"].clone();
    server.wait_until("the USD job ends", |_| ended(&job_state(&a, &id)));
    assert_eq!(job_state(&a, &id)["outcome"]["output"]["version"], "v2");
}

/// `husk <args>` against the server as tenant a: (exit code, stdout, stderr).
pub fn husk_cli(server: &Server, args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(args)
        .env("HUSK_SERVER", &server.url)
        .env("HUSK_TOKEN", TOKEN_A)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (output.status.code().unwrap_or(-1), text(&output.stdout), text(&output.stderr))
}

#[test]
fn the_cli_talks_to_the_server_in_tables_and_json() {
    let server = Server::start(&config());
    let (code, out, _) =
        husk_cli(&server, &["enqueue", "a-quote", "--input", r#"{"amount": 2, "currency": "EUR"}"#, "--key", "k"]);
    assert_eq!((code, out.as_str()), (0, "job 1 enqueued on topic a-quote\n"));
    let (_, out, _) = husk_cli(&server, &["enqueue", "a-quote", "--input", "{}", "--key", "k", "--json"]);
    let again: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((again["id"].clone(), again["created"].clone()), (json!(1), json!(false)));
    server.wait_until("job 1 ends", |s| ended(&job_state(&s.client(Some(TOKEN_A)), &json!(1))));
    let (code, out, _) = husk_cli(&server, &["job", "1", "--json"]);
    let job: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((code, job["outcome"]["kind"].clone()), (0, json!("completed")));
    let (_, out, _) = husk_cli(&server, &["jobs"]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("ID") && lines[1].starts_with("1 ") && lines[1].contains("completed"), "{out}");
    let (_, out, _) = husk_cli(&server, &["plugins"]);
    assert!(out.lines().any(|l| l.starts_with("a-quote") && l.ends_with('*')), "{out}");
    // A scheduled job: said so on enqueue, and by `husk job`.
    let (code, out, _) = husk_cli(&server, &["enqueue", "a-quote", "--delay", "1h"]);
    assert!(code == 0 && out.starts_with("job 2 enqueued on topic a-quote, scheduled for 20"), "{out}");
    let (_, out, _) = husk_cli(&server, &["job", "2"]);
    assert!(out.contains("state scheduled") && out.contains("not before: 20"), "{out}");
    let (code, _, err) = husk_cli(&server, &["enqueue", "a-quote", "--at", "2030-01-01T00:00:00Z", "--delay", "1s"]);
    assert!(code != 0 && err.contains("--delay"), "{err}");
    // A refusal: exit code 1 and the API's message on stderr.
    let (code, _, err) = husk_cli(&server, &["job", "99"]);
    assert_eq!(code, 1);
    assert!(err.contains("no job 99") && err.contains("404 not-found"), "{err}");
    let (code, _, err) = husk_cli(&server, &["deploy", "a-quote", "/nonexistent.wasm"]);
    assert!(code == 1 && err.contains("cannot read /nonexistent.wasm"), "{err}");
}

#[test]
fn the_cli_takes_every_filter_of_the_api_and_says_what_to_do() {
    let server = Server::start(&config());
    let done = enqueue(&server.client(Some(TOKEN_A)), "a-quote", &json!({ "amount": 2, "currency": "EUR" })).unwrap();
    let done = done["id"].clone();
    server.wait_until("the job ends", |s| ended(&job_state(&s.client(Some(TOKEN_A)), &done)));
    let ids = |args: &[&str]| -> Vec<Value> {
        let (code, out, err) = husk_cli(&server, &[&["jobs", "--json"], args].concat());
        assert_eq!(code, 0, "{err}");
        let page: Value = serde_json::from_str(&out).unwrap();
        page["jobs"].as_array().unwrap().iter().map(|j| j["id"].clone()).collect()
    };
    assert_eq!(ids(&["--state", "completed", "--outcome", "completed", "--topic", "a-quote"]), vec![done.clone()]);
    assert_eq!(ids(&["--outcome", "failed"]), Vec::<Value>::new());
    assert_eq!(
        ids(&["--enqueued-after", "2000-01-01T00:00:00+02:00", "--enqueued-before", "2999-01-01T00:00:00Z"]),
        vec![done.clone()]
    );
    assert_eq!(ids(&["--enqueued-after", "2999-01-01T00:00:00Z"]), Vec::<Value>::new());
    assert_eq!(ids(&["--before", &done.to_string()]), Vec::<Value>::new());
    assert_eq!(ids(&["--fault-code", "rates"]), Vec::<Value>::new());
    let (code, out, _) = husk_cli(&server, &["incidents", "--topic", "a-quote"]);
    assert_eq!((code, out.as_str()), (0, "no open incidents\n"));
    let (code, _, err) = husk_cli(&server, &["incidents", "--topic", "b-flaky"]);
    assert!(code == 1 && err.contains("404 unknown-topic"), "another tenant's topic: {err}");
    // A server as host:port, and no token: told where a token goes.
    let bare = server.url.trim_start_matches("http://");
    let output = Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(["jobs", "--server", bare])
        .env_remove("HUSK_TOKEN")
        .env_remove("HUSK_SERVER")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("401 unauthorized") && err.contains("set HUSK_TOKEN or pass --token"), "{err}");
}

#[test]
fn the_published_contract_names_every_route_and_each_takes_a_tenants_token() {
    let server = Server::start(&config());
    // The document is public: no token.
    let doc = server.client(None).get("/v1/openapi.json").unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    assert_eq!(paths.len(), 15, "14 under /v1 and /healthz");
    let anonymous = server.client(None);
    for (path, item) in paths {
        let concrete = path.replace("{topic}", "a-quote").replace("{id}", "1");
        for method in item.as_object().unwrap().keys() {
            let answer = match method.as_str() {
                "get" => anonymous.get(&concrete),
                "post" => anonymous.post(&concrete, None, &[]),
                other => panic!("{other} {path}: the client sends GET and POST"),
            };
            if path == "/healthz" {
                assert_eq!(answer.unwrap()["status"], "ok");
            } else {
                assert_eq!(refusal(answer), (401, "unauthorized".to_owned()), "{method} {path}");
            }
        }
    }
}

#[test]
fn a_job_is_told_in_one_vocabulary_and_listed_by_it() {
    let server = Server::start(&format!("{}\n[retention]\ndrop_inputs = [\"b-flaky\"]\n", config()));
    let (a, b, q) = (server.client(Some(TOKEN_A)), server.client(Some(TOKEN_B)), server.client(Some(TOKEN_Q)));
    let done = enqueue(&a, "a-quote", &json!({ "amount": 1, "currency": "EUR" })).unwrap()["id"].clone();
    let waiting = enqueue(&q, "q-flaky", &json!({ "succeed_on_attempt": 9 })).unwrap()["id"].clone();
    let dropped = enqueue(&b, "b-flaky", &json!({ "succeed_on_attempt": 1 })).unwrap()["id"].clone();
    server.wait_until("a's job ends", |_| ended(&job_state(&a, &done)));
    server.wait_until("b's job ends", |_| ended(&job_state(&b, &dropped)));
    server.wait_until("q's job waits for its retry", |_| job_state(&q, &waiting)["state"] == "retrying");

    let job = job_state(&a, &done);
    assert_eq!(job["state"], "completed");
    // One level: the outcome's kind and data side by side.
    assert_eq!(job["outcome"]["kind"], "completed");
    assert!(job["outcome"].get("outcome").is_none(), "{job}");
    // Times in RFC 3339, as the filters take them.
    for time in [&job["enqueued_at"], &job["outcome"]["finished_at"], &job["attempts"][0]["finished_at"]] {
        let text = time.as_str().unwrap_or_else(|| panic!("{time} is not text"));
        assert!(text.ends_with('Z') && text.contains('T'), "{text}");
        humantime::parse_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    let retrying = job_state(&q, &waiting);
    humantime::parse_rfc3339(retrying["not_before"].as_str().unwrap()).unwrap();
    // A job's input is in its answer, live or ended, unless its topic
    // drops inputs when its jobs end.
    assert_eq!(retrying["input"], json!({ "succeed_on_attempt": 9 }), "{retrying}");
    assert_eq!(job["input"], json!({ "amount": 1, "currency": "EUR" }), "{job}");
    let dropped = job_state(&b, &dropped);
    assert_eq!(dropped["state"], "completed", "{dropped}");
    assert!(dropped.get("input").is_none(), "[retention] drop_inputs: {dropped}");
    assert_eq!(retrying["retry_policy"]["kind"], "fixed", "{retrying}");

    let ids = |client: &husk_cli::client::Client, query: &str| -> Vec<Value> {
        let page = client.get(&format!("/v1/jobs?{query}")).unwrap();
        page["jobs"].as_array().unwrap().iter().map(|j| j["id"].clone()).collect()
    };
    assert_eq!(ids(&q, "state=retrying"), vec![waiting.clone()]);
    assert_eq!(ids(&q, "state=scheduled"), Vec::<Value>::new());
    assert_eq!(ids(&a, "state=completed"), vec![done.clone()]);
    assert_eq!(ids(&a, "state=completed&outcome=failed"), Vec::<Value>::new(), "a state and an outcome that disagree");
    assert_eq!(ids(&a, "state=queued"), Vec::<Value>::new());
}

#[test]
fn serve_warns_of_topics_no_token_reaches_and_names_the_dashboard() {
    // No tenant at all (with tenants, every topic must name one).
    let orphan = format!("store = \"husk.db\"\n\n[topics.orphan]\nplugin = \"{}\"\n", guest("transform").display());
    let server = Server::start_logging(tempfile::tempdir().unwrap(), &orphan, &[], "info");
    let log = server.log();
    assert!(log.contains("no API token reaches them") && log.contains("orphan"), "{log}");
    assert!(log.contains(&format!("the dashboard: {}/ui", server.url)), "{log}");
}

#[test]
fn a_scheduled_job_waits_as_scheduled_runs_at_its_time_and_can_be_cancelled() {
    let server = Server::start(&config());
    let a = server.client(Some(TOKEN_A));
    let body = |input: &Value| input.to_string().into_bytes();
    let eur = json!({ "amount": 1, "currency": "EUR" });

    // An hour away: scheduled, listed so, cancelled before it ran.
    let later = a.post("/v1/topics/a-quote/jobs?delay=1h", Some((&body(&eur), "application/json")), &[]).unwrap();
    let run_at = humantime::parse_rfc3339(later["run_at"].as_str().unwrap()).unwrap();
    let from_now = run_at.duration_since(std::time::SystemTime::now()).unwrap();
    assert!(from_now > Duration::from_secs(3500) && from_now <= Duration::from_secs(3600), "{from_now:?}");
    let job = job_state(&a, &later["id"]);
    assert_eq!((job["state"].clone(), job["not_before"].clone()), (json!("scheduled"), later["run_at"].clone()));
    let scheduled = a.get("/v1/jobs?state=scheduled").unwrap()["jobs"].as_array().unwrap().clone();
    assert_eq!(scheduled.iter().map(|j| j["id"].clone()).collect::<Vec<_>>(), [later["id"].clone()]);
    assert_eq!(a.post(&format!("/v1/jobs/{}/cancel", later["id"]), None, &[]).unwrap()["result"], "cancelled");
    assert_eq!(job_state(&a, &later["id"])["state"], "cancelled");

    // A second away: run once its time came, not before.
    let soon = a.post("/v1/topics/a-quote/jobs?delay=1s", Some((&body(&eur), "application/json")), &[]).unwrap();
    server.wait_until("the scheduled job ends", |_| ended(&job_state(&a, &soon["id"])));
    let job = job_state(&a, &soon["id"]);
    let started = humantime::parse_rfc3339(job["attempts"][0]["started_at"].as_str().unwrap()).unwrap();
    let due = humantime::parse_rfc3339(soon["run_at"].as_str().unwrap()).unwrap();
    assert!(started >= due, "started {started:?}, due {due:?}");
    assert_eq!(job["state"], "completed");

    // A time already past (even before 1970) runs at once; a batch
    // schedules each job alone.
    for past in ["2020-01-01T00:00:00Z", "1969-01-01T00:00:00Z"] {
        let path = format!("/v1/topics/a-quote/jobs?run_at={past}");
        let now = a.post(&path, Some((&body(&eur), "application/json")), &[]).unwrap();
        assert!(now.get("run_at").is_none(), "{now}");
        server.wait_until("the past-due job ends", |_| ended(&job_state(&a, &now["id"])));
    }
    let batch = json!([
        { "input": eur, "run_at": "2999-01-01T08:00:00+02:00" },
        { "input": eur },
        { "input": eur, "delay": "2h" },
    ]);
    let enqueued = a.post("/v1/topics/a-quote/jobs/batch", Some((&body(&batch), "application/json")), &[]).unwrap();
    let ids: Vec<Value> = enqueued["jobs"].as_array().unwrap().iter().map(|j| j["id"].clone()).collect();
    server.wait_until("the unscheduled one ends", |_| ended(&job_state(&a, &ids[1])));
    let first = job_state(&a, &ids[0]);
    assert_eq!(
        (first["state"].clone(), first["not_before"].clone()),
        (json!("scheduled"), json!("2999-01-01T06:00:00.000Z"))
    );
    assert_eq!(job_state(&a, &ids[2])["state"], "scheduled");
}

#[test]
fn jobs_run_by_priority_then_oldest_first() {
    let server = Server::start(&config());
    let a = server.client(Some(TOKEN_A));
    a.post("/v1/topics/a-quote/pause", None, &[]).unwrap();
    let eur = json!({ "amount": 1, "currency": "EUR" }).to_string();
    let mut ids = Vec::new();
    for priority in [0, 10, -5, 10] {
        let path = format!("/v1/topics/a-quote/jobs?priority={priority}");
        ids.push(a.post(&path, Some((eur.as_bytes(), "application/json")), &[]).unwrap()["id"].clone());
    }
    let batch = json!([{ "input": { "amount": 1, "currency": "EUR" }, "priority": 100 }]).to_string();
    let first = a.post("/v1/topics/a-quote/jobs/batch", Some((batch.as_bytes(), "application/json")), &[]).unwrap();
    assert_eq!(job_state(&a, &ids[1])["priority"], 10);
    a.post("/v1/topics/a-quote/resume", None, &[]).unwrap();
    ids.push(first["jobs"][0]["id"].clone());
    server.wait_until("every job ends", |_| ids.iter().all(|id| ended(&job_state(&a, id))));
    let outcomes = a.get("/v1/outcomes?wait=0s").unwrap()["outcomes"].as_array().unwrap().clone();
    let order: Vec<Value> = outcomes.iter().map(|o| o["job_id"].clone()).collect();
    let want = [first["jobs"][0]["id"].clone(), ids[1].clone(), ids[3].clone(), ids[0].clone(), ids[2].clone()];
    assert_eq!(order, want, "the highest priority first, each priority's oldest first");
}
