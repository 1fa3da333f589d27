//! The `husk` binary: `husk run` prints the outcome as JSON with an exit
//! code per kind of ending; bad input is one line on stderr.

use std::process::{Command, Output};

use husk_cli::cli::{EXIT_ERROR, EXIT_GUEST_FAULT, EXIT_LIMIT_KILL, EXIT_TRAP};
use serde_json::Value;

use crate::support::guest;

fn husk(args: &[&str]) -> Output {
    let cache = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(args)
        .env("HUSK_CACHE_DIR", cache.path())
        .env("RUST_LOG", "off")
        .output()
        .unwrap()
}

/// `husk run` of the guest `component` on `input`: (exit code, report).
pub fn run(component: &str, input: &str, extra: &[&str]) -> (i32, Value) {
    let path = guest(component);
    let mut args = vec!["run", path.to_str().unwrap(), "--input", input];
    args.extend(extra);
    let out = husk(&args);
    let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap(), report)
}

fn one_line_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(i32::from(EXIT_ERROR)));
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("backtrace"), "{stderr}");
    stderr
}

#[test]
fn run_prints_the_outcome_and_exits_by_kind_of_ending() {
    let (code, report) = run("transform", r#"{"name":"Ada","amount":1}"#, &[]);
    assert_eq!(code, 0);
    assert_eq!(report["outcome"], "completed");
    assert_eq!(report["output"]["greeting"], "hello, Ada");

    let (code, report) = run("flaky", r#"{"succeed_on_attempt":2}"#, &[]);
    assert_eq!(code, i32::from(EXIT_GUEST_FAULT));
    assert_eq!(report["fault"]["code"], "flaky.unavailable");
    let (code, _) = run("flaky", r#"{"succeed_on_attempt":2}"#, &["--attempt", "2"]);
    assert_eq!(code, 0);

    let (code, report) = run("spin", "{}", &["--timeout", "100ms"]);
    assert_eq!(code, i32::from(EXIT_LIMIT_KILL));
    assert_eq!(report["fault"]["code"], "husk.timeout");

    let (code, report) = run("spin", "{}", &["--fuel", "100000"]);
    assert_eq!(code, i32::from(EXIT_LIMIT_KILL));
    assert_eq!(
        (report["outcome"].as_str(), report["fault"]["code"].as_str()),
        (Some("killed"), Some("husk.out-of-fuel"))
    );

    let (code, report) = run("memory-bomb", "{}", &["--memory", "4MiB"]);
    assert_eq!(code, i32::from(EXIT_LIMIT_KILL));
    assert_eq!(report["fault"]["body"]["limit_bytes"], 4 << 20);

    let (code, report) = run("panic", "{}", &[]);
    assert_eq!(code, i32::from(EXIT_TRAP));
    assert_eq!((report["outcome"].as_str(), report["fault"]["code"].as_str()), (Some("trapped"), Some("husk.trap")));
    // Milliseconds to the microsecond, without float noise.
    let elapsed = report["stats"]["elapsed_ms"].as_f64().unwrap();
    assert_eq!(elapsed, (elapsed * 1e3).round() / 1e3, "{elapsed}");
}

#[test]
fn run_reads_input_from_a_file() {
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(input.path(), r#"{"name":"file"}"#).unwrap();
    let (code, report) = run("transform", &format!("@{}", input.path().display()), &[]);
    assert_eq!(code, 0);
    assert_eq!(report["output"]["greeting"], "hello, file");
}

#[test]
fn bad_input_is_a_one_line_error() {
    let transform = guest("transform");
    let transform = transform.to_str().unwrap();
    let missing = one_line_error(&husk(&["run", "/no/such.wasm", "--input", "{}"]));
    assert!(missing.contains("/no/such.wasm"), "{missing}");
    let not_wasm = one_line_error(&husk(&["run", env!("CARGO_MANIFEST_DIR"), "--input", "{}"]));
    assert!(not_wasm.contains("cannot read"), "{not_wasm}");
    let manifest = format!("{}/Cargo.toml", env!("CARGO_MANIFEST_DIR"));
    let not_component = one_line_error(&husk(&["run", &manifest, "--input", "{}"]));
    assert!(not_component.contains("not a WebAssembly component"), "{not_component}");
    let mapper = guest("mapper");
    let wrong_world = one_line_error(&husk(&["run", mapper.to_str().unwrap(), "--input", "{}"]));
    assert!(wrong_world.contains("`operation`") && wrong_world.contains("execute"), "{wrong_world}");
    let bad_json = one_line_error(&husk(&["run", transform, "--input", "{nope"]));
    assert!(bad_json.contains("not valid JSON"), "{bad_json}");
}

#[test]
fn compile_writes_a_component_run_loads_only_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let cwasm = dir.path().join("transform.cwasm");
    let transform = guest("transform");
    let out = husk(&["compile", transform.to_str().unwrap(), "-o", cwasm.to_str().unwrap(), "--world", "operation"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Machine code runs with the user's rights: only when they say so.
    let refused = one_line_error(&husk(&["run", cwasm.to_str().unwrap(), "--input", "{}"]));
    assert!(refused.contains("precompiled") && refused.contains("--allow-precompiled"), "{refused}");
    let out = husk(&["run", cwasm.to_str().unwrap(), "--input", r#"{"name":"aot"}"#, "--allow-precompiled"]);
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["stats"]["code_source"], "precompiled");
    assert_eq!(report["output"]["greeting"], "hello, aot");
}

#[test]
fn run_kills_a_guest_blocked_in_a_host_call_at_its_timeout() {
    for input in [r#"{"sleep_ms": 3600000}"#, r#"{"never": true}"#] {
        let (code, report) = run("sleeper", input, &["--timeout", "200ms"]);
        assert_eq!(code, i32::from(EXIT_LIMIT_KILL), "{input}: {report}");
        assert_eq!(report["fault"]["code"], "husk.timeout", "{input}");
        assert_eq!(report["fault"]["body"]["deadline_ms"], 200.0, "{input}");
    }
}

#[test]
fn run_logs_guest_text_with_its_control_characters_escaped() {
    let forged = "fine\n2026-12-01T00:00:00.000000Z  INFO husk::outcome: job 7 completed";
    let input = serde_json::json!({ "log": forged }).to_string();
    let path = guest("forger");
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_husk"))
        .args(["run", path.to_str().unwrap(), "--input", &input])
        .env("HUSK_CACHE_DIR", cache.path())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let log = String::from_utf8(out.stderr).unwrap();
    // The log import's message stays on its line, its newline escaped.
    assert!(
        log.contains(r"husk::guest: fine\n2026-12-01T00:00:00.000000Z  INFO husk::outcome: job 7 completed"),
        "{log}"
    );
    // No line starts with the guest's text: every one is husk's, with its
    // own time and the guest's target.
    assert!(log.lines().count() >= 5, "{log}");
    for line in log.lines() {
        assert!(!line.starts_with("2026-12-01T00:00:00.000000Z"), "a forged line: {log}");
        if line.contains("husk::outcome: job 7") {
            assert!(line.contains(" husk::guest: "), "a forged line: {line}");
        }
    }
}

#[test]
fn run_calls_only_the_hosts_allowed_on_its_command_line_and_reads_its_config() {
    let server = crate::support_http::TestServer::start();
    let input = serde_json::json!({ "url": server.url("/ok") }).to_string();
    let (code, report) = run("fetch", &input, &[]);
    assert_eq!(code, i32::from(EXIT_GUEST_FAULT), "{report}");
    assert_eq!(report["fault"]["code"], "http.http-request-denied");
    assert!(server.seen().is_empty());
    let (code, report) = run("fetch", &input, &["--allow-host", &server.origin()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!((report["output"]["status"].as_u64(), report["output"]["body"].as_str()), (Some(200), Some("ok")));
    assert_eq!(server.seen().len(), 1);
    assert_eq!(server.seen()[0].key.as_deref(), Some("husk-cli-1-1"));
    let (code, report) = run("config", r#"{"key": "region"}"#, &["--config", "region=eu-west-1"]);
    assert_eq!((code, &report["output"]["value"]), (0, &Value::from("eu-west-1")), "{report}");
    let (_, report) = run("config", r#"{"key": "other"}"#, &["--config", "region=eu-west-1"]);
    assert_eq!(report["output"]["value"], Value::Null);
    let out = husk(&["run", guest("fetch").to_str().unwrap(), "--input", &input, "--allow-host", "ftp://x"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("ftp://x"), "{out:?}");
}

/// `husk demo`, the README's first command: every job ends, and the `calls`
/// topic's service saw its retried jobs send the same key on every try.
#[test]
fn the_demo_ends_every_job_and_its_service_sees_one_key_per_job() {
    let out = husk(&["demo", "--store", "memory", "--no-progress"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}\n{}", String::from_utf8_lossy(&out.stderr));
    let row = |name: &str| {
        let line = table.lines().find(|l| l.trim_start().starts_with(name)).unwrap_or_else(|| panic!("{table}"));
        line.trim_start()[name.len()..].trim().to_owned()
    };
    assert_eq!(row("jobs"), "10000");
    assert_ne!(row("hung, killed"), "0", "{table}");
    let (same, retried) = row("same key each try").split_once('/').map(|(a, b)| (a.to_owned(), b.to_owned())).unwrap();
    assert!(retried.parse::<u32>().unwrap() > 0 && same == retried, "{table}");
}

#[test]
fn run_with_mapper_classifies_a_fault_as_a_topic_would() {
    let (code, report) = run("mapper", r#"{"reason": "insufficient-funds"}"#, &["--mapper", "payment.declined"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["classification"]["kind"], "business-error", "{report}");
    assert_eq!(report["classification"]["code"], "insufficient-funds", "{report}");
    let (_, report) = run("mapper", r#"{"status": "on-hold"}"#, &["--mapper", "anything"]);
    assert_eq!(report["classification"], serde_json::json!({ "kind": "business-status", "value": "on-hold" }));
    // A mapper past its limits: technical, as on a topic.
    let (code, report) = run("bad-mapper", "{}", &["--mapper", "sleep"]);
    assert_eq!((code, report["classification"]["kind"].as_str()), (0, Some("technical")), "{report}");
    // An operation is no mapper: one line saying so.
    let out = husk(&["run", guest("transform").to_str().unwrap(), "--input", "{}", "--mapper", "x"]);
    let err = one_line_error(&out);
    assert!(err.contains("is not a husk:worker `error-mapper` component"), "{err}");
}
