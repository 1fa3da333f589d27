//! Pausing a topic through the real binary: a paused topic's jobs are
//! enqueued but not run, on every process sharing the store, until a
//! resume; the pause survives a restart; only the topic's tenant may pause
//! it; `husk pause`, `husk resume` and `husk topics` drive and show it.

use std::process::Command;

use husk_server::tokens::token_hash;
use serde_json::{Value, json};

use crate::rig::pg::TestSchema;
use crate::support::guest;
use crate::support_server::{Server, TOKEN_A, ended, enqueue, job_state, refusal};

const TOKEN_OTHER: &str = "token-of-a-tenant-without-topics";

fn config(store_lines: &str) -> String {
    format!(
        r#"{store_lines}
epoch_tick = "10ms"
shutdown_grace = "2s"

[tenants.a]
tokens = ["sha256:{hash_a}"]

[tenants.other]
tokens = ["sha256:{hash_other}"]

[topics.held]
tenant = "a"
plugin = "{transform}"
workers = 2

[topics.free]
tenant = "a"
plugin = "{transform}"
workers = 1
"#,
        hash_a = token_hash(TOKEN_A),
        hash_other = token_hash(TOKEN_OTHER),
        transform = guest("transform").display(),
    )
}

/// `husk <args> --server <server> --token <token>`: its stdout.
fn husk(server: &Server, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(args)
        .args(["--server", &server.url, "--token", TOKEN_A])
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(out.status.success(), "husk {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn topic_view(server: &Server, topic: &str) -> Value {
    let topics = server.client(Some(TOKEN_A)).get("/v1/topics").unwrap();
    topics["topics"].as_array().unwrap().iter().find(|t| t["topic"] == topic).unwrap().clone()
}

/// Enqueues `count` jobs on the paused `held` through `on`, then one on
/// `free`, and waits for that one to end: the workers are fetching, and
/// `held`'s jobs must still be queued.
fn enqueue_while_paused(on: &Server, count: usize) -> Vec<Value> {
    let a = on.client(Some(TOKEN_A));
    let held: Vec<Value> =
        (0..count).map(|i| enqueue(&a, "held", &json!({ "name": format!("h{i}") })).unwrap()["id"].clone()).collect();
    let free = enqueue(&a, "free", &json!({ "name": "f" })).unwrap()["id"].clone();
    on.wait_until("the free topic's job ends", |_| ended(&job_state(&a, &free)));
    for id in &held {
        assert_eq!(job_state(&a, id)["state"], "queued", "job {id} of the paused topic was fetched");
    }
    held
}

fn wait_all_completed(on: &Server, ids: &[Value]) {
    let a = on.client(Some(TOKEN_A));
    for id in ids {
        on.wait_until("a resumed job ends", |_| ended(&job_state(&a, id)));
        assert_eq!(job_state(&a, id)["outcome"]["kind"], "completed");
    }
}

#[test]
fn a_paused_topic_keeps_its_jobs_across_a_restart_until_resumed() {
    let server = Server::start(&config(r#"store = "husk.db""#));
    assert_eq!(husk(&server, &["pause", "held"]), "topic held: paused\n");
    assert_eq!(husk(&server, &["pause", "held"]), "topic held: already paused\n");
    let other = server.client(Some(TOKEN_OTHER));
    assert_eq!(refusal(other.post("/v1/topics/held/resume", None, &[])), (404, "unknown-topic".to_owned()));
    let held = enqueue_while_paused(&server, 3);
    assert_eq!(topic_view(&server, "held")["paused"], true);
    // (Depths come from the status snapshot, published every second.)
    server.wait_until("the topics list counts the held jobs", |s| topic_view(s, "held")["depth"]["queued"] == 3);
    assert_eq!(topic_view(&server, "free")["paused"], false);
    let listed = husk(&server, &["topics"]);
    assert!(listed.lines().any(|l| l.starts_with("held") && l.ends_with("paused")), "{listed}");

    // The pause is the store's: a restart keeps it.
    let server = Server::start_in(server.stop(), &config(r#"store = "husk.db""#));
    let more = enqueue_while_paused(&server, 1);
    assert_eq!(topic_view(&server, "held")["paused"], true);

    assert_eq!(husk(&server, &["resume", "held"]), "topic held: resumed\n");
    assert_eq!(husk(&server, &["resume", "held"]), "topic held: was not paused\n");
    wait_all_completed(&server, &[held, more].concat());
    assert_eq!(topic_view(&server, "held")["paused"], false);
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn a_pause_on_one_process_holds_the_topic_on_every_process_sharing_postgres() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = TestSchema::new(url);
    let config = config(&format!("store = \"{url}\"\npostgres_schema = \"{}\"", schema.name));
    let servers: Vec<Server> = (0..3).map(|_| Server::process(&config)).collect();
    assert_eq!(husk(&servers[0], &["pause", "held"]), "topic held: paused\n");
    // Enqueued through another process, whose workers are fetching too.
    let held = enqueue_while_paused(&servers[1], 6);
    for server in &servers {
        assert_eq!(topic_view(server, "held")["paused"], true);
    }
    // Resumed through the third: the jobs run (the other processes' waiting
    // fetchers are woken by NOTIFY) and all end.
    assert_eq!(husk(&servers[2], &["resume", "held"]), "topic held: resumed\n");
    wait_all_completed(&servers[1], &held);
}
