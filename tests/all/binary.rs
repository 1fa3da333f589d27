//! Outputs and fault bodies are bytes (the WIT's `list<u8>`), kept exactly:
//! the `binary` guest returns bytes that are not UTF-8, JSON with its own
//! whitespace, and a non-JSON fault body, through `husk serve` on each of
//! the three stores; the API and the outcome stream show JSON as JSON and
//! anything else as `{"base64": …}`, and the store gives back the very bytes.
//! `husk run` prints the same form.

use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use husk::outcome::Outcome;
use husk::store::{JobId, JobStore};
use husk_server::tokens::token_hash;
use serde_json::{Value, json};

use crate::rig::pg::TestSchema;
use crate::support::guest;
use crate::support_server::{Server, TOKEN_A, ended, enqueue, job_state};

/// Not UTF-8, with a NUL.
const BINARY: &[u8] = b"\xff\x00\xfehusk\x80";
/// JSON whose whitespace and key order a round trip through a JSON value
/// would lose.
const SPACED: &str = "{ \"zeta\": 1,\n  \"alpha\": [2.50, null] }";

fn config(store_lines: &str) -> String {
    format!(
        r#"{store_lines}
epoch_tick = "10ms"
shutdown_grace = "2s"

[tenants.a]
tokens = ["sha256:{hash}"]

[topics.binary]
tenant = "a"
plugin = "{plugin}"
workers = 1
retry = {{ kind = "none" }}
"#,
        hash = token_hash(TOKEN_A),
        plugin = guest("binary").display(),
    )
}

/// Runs the three jobs on a server with `store_lines`; checks what the API
/// shows; returns their ids, for a look into the store.
fn run_through_the_api(store_lines: &str) -> (Server, [JobId; 3]) {
    let server = Server::start(&config(store_lines));
    let a = server.client(Some(TOKEN_A));
    let inputs = [json!({ "output": BINARY }), json!({ "text": SPACED }), json!({ "fault": BINARY })];
    let ids: Vec<Value> = inputs.iter().map(|input| enqueue(&a, "binary", input).unwrap()["id"].clone()).collect();
    for id in &ids {
        server.wait_until("the job ends", |_| ended(&job_state(&a, id)));
    }
    let base64 = json!({ "base64": STANDARD.encode(BINARY) });
    let views: Vec<Value> = ids.iter().map(|id| job_state(&a, id)["outcome"].clone()).collect();
    assert_eq!((views[0]["kind"].clone(), views[0]["output"].clone()), (json!("completed"), base64.clone()));
    assert_eq!(views[1]["output"], serde_json::from_str::<Value>(SPACED).unwrap(), "JSON is shown as JSON");
    assert_eq!(views[2]["kind"], "failed");
    assert_eq!(views[2]["last_fault"], json!({ "code": "binary.fault", "body": base64 }));
    let stream = a.get("/v1/outcomes?after=0&wait=0s").unwrap();
    // A streamed outcome is the job's outcome with the job named.
    let streamed: Vec<Value> = stream["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let mut o = o.clone();
            for field in ["cursor", "job_id", "topic", "enqueued_at"] {
                o.as_object_mut().unwrap().remove(field).unwrap_or_else(|| panic!("{field} in {o}"));
            }
            o
        })
        .collect();
    assert_eq!(streamed, views, "the outcome stream shows the same");
    let ids = ids.iter().map(|id| JobId(id.as_u64().unwrap())).collect::<Vec<_>>();
    (server, ids.try_into().unwrap())
}

/// The store gives back exactly the bytes the guest returned.
fn check_store(store: &dyn JobStore, ids: [JobId; 3]) {
    let outcome = |id| store.get(id).unwrap().unwrap().outcome.unwrap().outcome;
    assert_eq!(outcome(ids[0]), Outcome::Completed { output: BINARY.to_vec() });
    assert_eq!(outcome(ids[1]), Outcome::Completed { output: SPACED.as_bytes().to_vec() });
    let Outcome::Failed { last_fault, .. } = outcome(ids[2]) else { panic!("{:?}", outcome(ids[2])) };
    assert_eq!(last_fault.body, BINARY);
    let history = store.get(ids[2]).unwrap().unwrap().attempts;
    assert_eq!(history[0].fault.as_ref().unwrap().body, BINARY, "the attempt's history too");
}

#[test]
fn binary_outputs_round_trip_on_the_memory_store() {
    run_through_the_api(r#"store = "memory""#);
}

#[test]
fn binary_outputs_round_trip_on_sqlite() {
    let (server, ids) = run_through_the_api(r#"store = "husk.db""#);
    let dir = server.stop();
    let store = husk_sqlite::SqliteStore::open(&dir.path().join("husk.db"), husk_sqlite::Durability::Normal).unwrap();
    check_store(&store, ids);
}

#[test]
#[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
fn binary_outputs_round_trip_on_postgres() {
    let Some(url) = crate::rig::pg::url() else { return };
    let schema = TestSchema::new(url);
    let (server, ids) = run_through_the_api(&format!("store = \"{url}\"\npostgres_schema = \"{}\"", schema.name));
    check_store(&schema.open(), ids);
    drop(server);
}

#[test]
fn husk_run_prints_json_as_json_and_other_bytes_as_base64() {
    let run = |input: &Value| {
        let out = Command::new(env!("CARGO_BIN_EXE_husk"))
            .args(["run", "--no-cache"])
            .arg(guest("binary"))
            .args(["--input", &input.to_string()])
            .env("RUST_LOG", "off")
            .output()
            .unwrap();
        serde_json::from_slice::<Value>(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    };
    let printed = run(&json!({ "output": BINARY }));
    assert_eq!(printed["output"], json!({ "base64": STANDARD.encode(BINARY) }));
    let printed = run(&json!({ "text": SPACED }));
    assert_eq!(printed["output"], serde_json::from_str::<Value>(SPACED).unwrap());
}
