//! What a guest returns is data, never a danger: the `smuggler` guest
//! returns a topic's secrets in the forms a guest shows them by accident,
//! and JSON nested past every parser's limit; nothing of a secret reaches
//! the API, the store's file or husk's log, and every reader (the API, the
//! outcome stream, the dashboard, the CLI) answers. A host failure is the
//! host's code, never a guest's trap.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use husk::fault::codes;
use husk::outcome::Outcome;
use husk::sandbox::CancelToken;
use husk::store::{LockedJob, MemoryStore};
use husk::worker::{Handled, Handler};
use husk::{Host, Topic};
use serde_json::{Value, json};

use crate::api::husk_cli;
use crate::support::guest;
use crate::support_server::{Server, TOKEN_A, ended, enqueue, job_state};
use crate::support_sink::WaitingSink;
use crate::ui::Browser;

/// A secret with characters JSON escapes.
const QUOTED: &str = r#"pa"ss\word-42-c0ffee"#;
/// A multi-line secret.
const PEM: &str = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n\
                   BKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----";
/// Every way `smuggler` shows a secret.
const FORMS: [&str; 7] = ["reserved-fault", "json-output", "json-fault", "json-log", "stdout", "straddle", "drip"];

/// The config of tenant a with the topic `t` on `smuggler`, its secrets
/// `quoted` and `pem` read from files in `dir`.
fn config(dir: &std::path::Path) -> String {
    for (name, value) in [("quoted", QUOTED), ("pem", PEM)] {
        let file = dir.join(name);
        std::fs::write(&file, format!("{value}\n")).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    format!(
        r#"store = "husk.db"
epoch_tick = "10ms"

[tenants.a]
tokens = ["sha256:{hash}"]

[topics.t]
tenant = "a"
plugin = "{plugin}"
workers = 1
retry = {{ kind = "none" }}

[topics.t.secrets]
quoted = "file:quoted"
pem = "file:pem"
"#,
        hash = husk_server::tokens::token_hash(TOKEN_A),
        plugin = guest("smuggler").display(),
    )
}

/// The forms of `secret` found in `text`: itself, JSON-escaped, either
/// half (raw or escaped), any of its lines, or its base64 at any of the
/// three alignments.
fn leaks(text: &str, secret: &str) -> Vec<String> {
    let escaped = |s: &str| serde_json::to_string(s).unwrap().trim_matches('"').to_owned();
    let half = secret.len() / 2;
    let mut forms = vec![secret.to_owned(), escaped(secret)];
    for part in [&secret[..half], &secret[half..]] {
        forms.extend([part.to_owned(), escaped(part)]);
    }
    forms.extend(secret.lines().filter(|line| line.len() >= 8).map(str::to_owned));
    for offset in 0..3 {
        let mut padded = vec![0; offset];
        padded.extend_from_slice(secret.as_bytes());
        let encoded = STANDARD.encode(&padded);
        // Only the characters made of the secret's bytes alone.
        let first = if offset == 0 { 0 } else { 4 };
        let last = (padded.len() / 3) * 4;
        forms.push(encoded[first..last].to_owned());
    }
    forms.into_iter().filter(|form| text.contains(form.as_str())).collect()
}

fn assert_no_leak(what: &str, text: &str) {
    for secret in [QUOTED, PEM] {
        let found = leaks(text, secret);
        assert!(found.is_empty(), "{what} shows a secret as {found:?}:\n{text}");
    }
}

/// Bytes shown as `{"base64": …}`, decoded.
fn base64_bytes(value: &Value) -> Vec<u8> {
    STANDARD.decode(value["base64"].as_str().unwrap_or_else(|| panic!("not a base64 marker: {value}"))).unwrap()
}

#[test]
fn a_secret_leaks_in_no_form_to_the_api_the_store_or_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let server = Server::start_logging(dir, &config, &[], "info");
    let client = server.client(Some(TOKEN_A));
    let mut jobs = Vec::new();
    for secret in ["quoted", "pem"] {
        for form in FORMS {
            let id = enqueue(&client, "t", &json!({ "secret": secret, "form": form })).unwrap()["id"].clone();
            jobs.push((secret, form, id));
        }
    }
    server.wait_until("the jobs end", |_| jobs.iter().all(|(.., id)| ended(&job_state(&client, id))));
    let mut views = Vec::new();
    for (secret, form, id) in &jobs {
        let view = job_state(&client, id);
        let outcome = &view["outcome"];
        let what = format!("{secret} as {form}: {view}");
        // What each form left, with the secret replaced.
        match *form {
            "reserved-fault" => {
                assert_eq!(outcome["last_fault"]["code"], codes::GUEST_RESERVED_CODE, "{what}");
                assert_eq!(outcome["last_fault"]["body"]["code"], "husk.leak", "{what}");
                assert_eq!(base64_bytes(&outcome["last_fault"]["body"]["body"]), b"leaked: ***", "{what}");
            }
            "json-output" => assert_eq!(outcome["output"], json!({ "leaked": "***" }), "{what}"),
            "json-fault" => assert_eq!(outcome["last_fault"]["body"], json!({ "leaked": "***" }), "{what}"),
            "drip" => {
                assert_eq!(outcome["last_fault"]["code"], codes::TRAP, "{what}");
                let message = outcome["last_fault"]["body"]["guest_message"].as_str().unwrap();
                assert!(message.starts_with("***") && message.contains("dripped"), "{what}");
            }
            _ => assert_eq!(outcome["output"], json!({ "shown": form }), "{what}"),
        }
        views.push(view.to_string());
    }
    views.push(client.get("/v1/jobs?topic=t").unwrap().to_string());
    views.push(client.get("/v1/incidents").unwrap().to_string());
    views.push(client.get("/v1/outcomes?after=0&limit=1000&wait=0s").unwrap().to_string());
    let log = server.log();
    // The log forms reached the log, redacted.
    for shown in [r#"husk::guest: {"leaked":"***"} job_id="#, "husk::guest: *** job_id=", "husk::guest: before job_id="]
    {
        assert!(log.contains(shown), "the log has {shown}:\n{log}");
    }
    assert!(log.contains(&format!("{}***", "x".repeat(64))), "the padded line, redacted:\n{log}");
    let (_, dir) = server.terminate();
    for view in &views {
        assert_no_leak("the API", view);
    }
    assert_no_leak("husk's log", &log);
    let mut files = 0;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap().to_string_lossy().starts_with("husk.db") {
            let bytes = std::fs::read(&path).unwrap();
            assert_no_leak(&path.display().to_string(), &String::from_utf8_lossy(&bytes));
            files += 1;
        }
    }
    assert!(files >= 1, "the SQLite store was read");
}

/// `[[…]]` nested `depth` deep.
fn nested(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn json_of_any_depth_is_shown_by_every_reader_and_the_stream_goes_past_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let server = Server::start_in(dir, &config);
    let client = server.client(Some(TOKEN_A));
    let mut jobs = Vec::new();
    for depth in [128, 1_000, 100_000] {
        for shape in ["output", "fault", "reserved-fault"] {
            let id = enqueue(&client, "t", &json!({ "depth": depth, "as": shape })).unwrap()["id"].clone();
            jobs.push((depth, shape, id));
        }
    }
    // An input as deep is taken too, and one shallow job ends last.
    let deep_input = format!(r#"{{"depth": 3, "as": "output", "deep": {}}}"#, nested(100_000));
    let deep_input_id =
        client.post("/v1/topics/t/jobs", Some((deep_input.as_bytes(), "application/json")), &[]).unwrap()["id"].clone();
    let last = enqueue(&client, "t", &json!({ "depth": 2, "as": "output" })).unwrap()["id"].clone();
    server.wait_until("the last job ends", |_| ended(&job_state(&client, &last)));
    for (depth, shape, id) in &jobs {
        let view = job_state(&client, id);
        let outcome = &view["outcome"];
        let what = format!("{depth} deep as {shape}: {}", &view.to_string()[..200.min(view.to_string().len())]);
        let nested = nested(*depth).into_bytes();
        match *shape {
            "output" => assert_eq!(base64_bytes(&outcome["output"]), nested, "{what}"),
            "fault" => {
                assert_eq!(outcome["last_fault"]["code"], "smuggler.deep", "{what}");
                assert_eq!(base64_bytes(&outcome["last_fault"]["body"]), nested, "{what}");
            }
            _ => {
                assert_eq!(outcome["last_fault"]["code"], codes::GUEST_RESERVED_CODE, "not the host's trap: {what}");
                assert_eq!(outcome["last_fault"]["body"]["code"], "husk.deep", "{what}");
                assert_eq!(base64_bytes(&outcome["last_fault"]["body"]["body"]), nested, "{what}");
            }
        }
    }
    assert_eq!(job_state(&client, &deep_input_id)["outcome"]["output"], json!([[[]]]));
    assert_eq!(client.get("/v1/jobs?topic=t&limit=100").unwrap()["jobs"].as_array().unwrap().len(), 11);
    assert_eq!(client.get("/v1/incidents").unwrap()["incidents"].as_array().unwrap().len(), 6);
    // A consumer reading one outcome at a time reads every one, past the
    // deep ones, to the last.
    let (mut cursor, mut seen) = (0, Vec::new());
    loop {
        let page = client.get(&format!("/v1/outcomes?after={cursor}&limit=1&wait=0s")).unwrap();
        let Some(outcome) = page["outcomes"].as_array().unwrap().first().cloned() else { break };
        seen.push(outcome["job_id"].clone());
        cursor = page["cursor"].as_u64().unwrap();
    }
    assert_eq!(seen.len(), 11, "{seen:?}");
    assert_eq!(seen.last(), Some(&last));
    // The dashboard and the CLI show them.
    let mut browser = Browser::new(&server);
    assert_eq!(browser.sign_in(TOKEN_A).status, 303);
    for page in ["/ui/jobs?topic=t".to_owned(), "/ui/incidents".to_owned()]
        .into_iter()
        .chain(jobs.iter().map(|(.., id)| format!("/ui/jobs/{id}")))
    {
        assert_eq!(browser.get(&page).status, 200, "{page}");
    }
    for args in [vec!["jobs", "--topic", "t"], vec!["incidents"], vec!["job", "3", "--json"]] {
        let (code, out, err) = husk_cli(&server, &args);
        assert_eq!(code, 0, "husk {args:?}: {out}{err}");
    }
    let (code, report) = crate::cli::run("smuggler", r#"{"depth": 100000, "as": "reserved-fault"}"#, &[]);
    assert_eq!(code, i32::from(husk_cli::cli::EXIT_GUEST_FAULT), "husk run: {report}");
    assert_eq!(report["fault"]["code"], codes::GUEST_RESERVED_CODE);
    let (code, report) = crate::cli::run("smuggler", r#"{"depth": 1000, "as": "output"}"#, &[]);
    assert_eq!((code, base64_bytes(&report["output"])), (0, nested(1_000).into_bytes()));
}

/// A handler that panics: a failure of the host's own code.
struct Panics;

impl Handler for Panics {
    fn handle(&self, _job: &LockedJob, _cancel: &CancelToken) -> Handled {
        panic!("a bug in the host");
    }
}

#[test]
fn a_panic_of_the_host_is_a_host_error_not_a_guest_trap() {
    let sink = Arc::new(WaitingSink::default());
    let host = Host::builder()
        .store(Arc::new(MemoryStore::new()))
        .sink(sink.clone())
        .topic(Topic::native("t", Arc::new(Panics)).with_retry(husk::retry::RetryPolicySpec::None))
        .build()
        .unwrap();
    host.enqueue("t", b"{}".to_vec()).unwrap();
    let outcomes = sink.wait_for(1, std::time::Duration::from_secs(60));
    let Outcome::Failed { last_fault, .. } = &outcomes[0].outcome else { panic!("{:?}", outcomes[0]) };
    assert_eq!(last_fault.code, codes::HOST_ERROR, "{last_fault}");
    assert!(last_fault.body_value()["reason"].as_str().unwrap().contains("a bug in the host"), "{last_fault}");
    host.shutdown();
}
