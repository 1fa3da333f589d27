//! Batch enqueue through a real `husk serve` (SQLite): one transaction, all
//! or nothing — a bad job or a batch past the tenant's `max_queued`
//! enqueues none of it — and idempotency keys that name the existing job
//! whether repeated within a batch or across batches; `husk enqueue --file`.

use husk_cli::client::{Client, ClientError};
use serde_json::{Value, json};

use crate::api::{husk_cli, visible_state};
use crate::support_server::{Server, TOKEN_A, TOKEN_Q, config, ended, job_state, refusal};

fn batch(client: &Client, topic: &str, jobs: &Value) -> Result<Value, ClientError> {
    let body = jobs.to_string();
    client.post(&format!("/v1/topics/{topic}/jobs/batch"), Some((body.as_bytes(), "application/json")), &[])
}

fn ids(answer: &Value) -> Vec<(Value, Value)> {
    answer["jobs"].as_array().unwrap().iter().map(|j| (j["id"].clone(), j["created"].clone())).collect()
}

#[test]
fn a_batch_is_all_or_nothing_and_its_keys_name_existing_jobs() {
    let server = Server::start(&config());
    let (a, q) = (server.client(Some(TOKEN_A)), server.client(Some(TOKEN_Q)));
    let eur = |amount: u32| json!({ "amount": amount, "currency": "EUR" });
    let jobs = json!([
        { "input": eur(1), "key": "k1" },
        { "input": eur(2), "key": "k2" },
        { "input": eur(3), "key": "k1" },
        { "input": eur(4) },
    ]);
    let first = batch(&a, "a-quote", &jobs).unwrap();
    assert_eq!(first["created"], 3);
    let made = ids(&first);
    assert_eq!(
        made.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>(),
        [json!(true), json!(true), json!(false), json!(true)]
    );
    assert_eq!(made[2].0, made[0].0, "a key repeated in the batch names the batch's first job with it");
    // The same keys in a later batch (and through the single enqueue) name the same jobs.
    let again =
        batch(&a, "a-quote", &json!([{ "input": eur(9), "key": "k2" }, { "input": eur(9), "key": "k1" }])).unwrap();
    assert_eq!(again["created"], 0);
    assert_eq!(ids(&again), [(made[1].0.clone(), json!(false)), (made[0].0.clone(), json!(false))]);
    let single = a
        .post(
            "/v1/topics/a-quote/jobs",
            Some((eur(9).to_string().as_bytes(), "application/json")),
            &[("Idempotency-Key", "k2")],
        )
        .unwrap();
    assert_eq!((single["id"].clone(), single["created"].clone()), (made[1].0.clone(), json!(false)));
    for (id, _) in [&made[0], &made[1], &made[3]] {
        server.wait_until("the batch's jobs end", |_| ended(&job_state(&a, id)));
        assert_eq!(job_state(&a, id)["outcome"]["kind"], "completed");
    }

    // Tenant q's max_queued is 3: a batch of 4 is refused whole, 3 fit, then nothing more.
    let gated = |n: usize| json!((0..n).map(|_| json!({ "input": { "succeed_on_attempt": 9 } })).collect::<Vec<_>>());
    let before = visible_state(&server);
    let big = json!({ "text": "x".repeat(2048) });
    let cases = [
        ("past max_queued", batch(&q, "q-flaky", &gated(4)), 429, "quota-exceeded"),
        (
            "one input over max_input_size",
            batch(&a, "a-quote", &json!([{ "input": eur(5) }, { "input": big }])),
            413,
            "payload-too-large",
        ),
        (
            "one bad key",
            batch(&a, "a-quote", &json!([{ "input": eur(5), "key": "new" }, { "input": eur(6), "key": "" }])),
            400,
            "bad-request",
        ),
        (
            "a job without input",
            batch(&a, "a-quote", &json!([{ "input": eur(5) }, { "key": "x" }])),
            400,
            "invalid-body",
        ),
        ("an unknown field", batch(&a, "a-quote", &json!([{ "input": eur(5), "delay": 1 }])), 400, "invalid-body"),
        ("not an array", batch(&a, "a-quote", &json!({ "input": eur(5) })), 400, "invalid-body"),
        ("empty", batch(&a, "a-quote", &json!([])), 400, "bad-request"),
        ("another tenant's topic", batch(&q, "a-quote", &json!([{ "input": eur(5) }])), 404, "unknown-topic"),
    ];
    for (what, result, status, kind) in cases {
        assert_eq!(refusal(result), (status, kind.to_owned()), "{what}");
    }
    assert_eq!(visible_state(&server), before, "a refused batch enqueued something");
    assert_eq!(batch(&q, "q-flaky", &gated(3)).unwrap()["created"], 3);
    assert_eq!(refusal(batch(&q, "q-flaky", &gated(1))), (429, "quota-exceeded".to_owned()));
}

#[test]
fn husk_enqueue_file_sends_a_json_lines_file_in_batches() {
    let server = Server::start(&config());
    let file = server.dir.path().join("jobs.jsonl");
    let lines = [
        r#"{"input": {"amount": 1, "currency": "EUR"}, "key": "a"}"#,
        r#"{"input": {"amount": 2, "currency": "EUR"}}"#,
        "",
        r#"{"input": {"amount": 3, "currency": "EUR"}, "key": "a"}"#,
        r#"{"input": {"amount": 4, "currency": "EUR"}, "key": "b"}"#,
        r#"{"input": {"amount": 5, "currency": "EUR"}}"#,
    ];
    std::fs::write(&file, lines.join("\n")).unwrap();
    let path = file.to_str().unwrap();
    let (code, out, err) = husk_cli(&server, &["enqueue", "a-quote", "--file", path, "--batch", "2"]);
    assert_eq!(
        (code, out.as_str()),
        (0, "4 jobs enqueued on topic a-quote, 1 already enqueued with their keys\n"),
        "{err}"
    );
    let (_, out, _) = husk_cli(&server, &["enqueue", "a-quote", "--file", path, "--json"]);
    let summary: Value = serde_json::from_str(&out).unwrap();
    // Again: the keyed lines name their jobs, the two without a key are new jobs.
    assert_eq!((summary["created"].clone(), summary["existing"].clone()), (json!(2), json!(3)), "{out}");
    let a = server.client(Some(TOKEN_A));
    server.wait_until("the file's jobs end", |_| {
        let jobs = a.get("/v1/jobs").unwrap();
        jobs["jobs"].as_array().unwrap().len() == 6 && jobs["jobs"].as_array().unwrap().iter().all(ended)
    });
    // A line that is no job: nothing sent, the line named.
    std::fs::write(&file, "{\"input\": 1}\nnot json\n").unwrap();
    let (code, _, err) = husk_cli(&server, &["enqueue", "a-quote", "--file", path]);
    assert!(code == 1 && err.contains("jobs.jsonl:2: not a job"), "{err}");
}
