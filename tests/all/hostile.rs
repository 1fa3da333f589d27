//! The hostile example guests: every way a guest can misbehave ends in a
//! typed ending with a reserved fault code, and the host keeps going.

use std::time::Duration;

use husk::fault::codes;
use husk::sandbox::{CancelToken, Ending, Kill, Limits};
use serde_json::json;

use crate::support::{GuestLogs, fault, fuel_sandbox, job, load, manual_sandbox, output, run, run_with, sandbox};

#[test]
fn memory_bomb_is_killed_at_its_memory_cap() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "memory-bomb");
    let limits = Limits::default().with_memory(8 << 20);
    let execution = run_with(&sandbox, &plugin, json!({}), &limits);
    match &execution.ending {
        Ending::Killed(Kill::MemoryLimit { limit, requested }) => {
            assert_eq!(*limit, 8 << 20);
            assert!(*requested > 8 << 20);
        }
        other => panic!("expected a memory-limit kill, got {other:?}"),
    }
    let (fault, body) = fault(&execution);
    assert_eq!(fault.code, codes::MEMORY_LIMIT);
    assert_eq!(body["limit_bytes"], 8 << 20);
    assert!(execution.peak_memory > 8 << 20);
}

#[test]
fn unbounded_recursion_is_a_stack_overflow() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "recursion");
    let (fault, body) = fault(&run(&sandbox, &plugin, json!({})));
    assert_eq!(fault.code, codes::STACK_OVERFLOW);
    assert_eq!(body["max_wasm_stack_bytes"], 512 << 10);
}

#[test]
fn panic_is_a_trap_carrying_the_panic_message() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "panic");
    let execution = run(&sandbox, &plugin, json!({}));
    assert!(matches!(&execution.ending, Ending::Killed(kill) if !kill.is_limit()));
    let (fault, body) = fault(&execution);
    assert_eq!(fault.code, codes::TRAP);
    let message = body["guest_message"].as_str().unwrap();
    assert!(message.contains("guest gave up on job job-1"), "{message}");
    assert!(body["trap"].as_str().unwrap().contains("unreachable"), "{body}");
}

#[test]
fn oversized_output_is_refused_and_output_at_the_cap_is_not() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "big-output");
    let limits = Limits::default().with_max_output(64 << 10);
    let (fault, body) = fault(&run_with(&sandbox, &plugin, json!({ "bytes": (64 << 10) + 1 }), &limits));
    assert_eq!(fault.code, codes::OUTPUT_TOO_LARGE);
    assert_eq!(body["size_bytes"], (64 << 10) + 1);
    assert_eq!(body["limit_bytes"], 64 << 10);
    let at_cap = run_with(&sandbox, &plugin, json!({ "bytes": 64 << 10 }), &limits);
    assert!(matches!(&at_cap.ending, Ending::Returned(bytes) if bytes.len() == 64 << 10));
}

#[test]
fn log_flood_completes_and_at_most_the_cap_reaches_the_log() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "log-flood");
    let cap = 16 << 10;
    let limits = Limits::default().with_log_cap(cap);
    let logs = GuestLogs::default();
    let execution = logs.capture(|| run_with(&sandbox, &plugin, json!({ "lines": 20_000 }), &limits));
    assert_eq!(output(&execution), json!({ "lines": 20_000 }));
    assert!(execution.log.bytes_written <= cap);
    assert!(execution.log.bytes_written > cap / 2, "the log was used up to near its cap");
    assert!(execution.log.bytes_dropped > 1 << 20, "{:?}", execution.log);
    let logged: usize = logs.messages().iter().map(String::len).sum();
    assert!(logged > 0 && logged as u64 <= cap, "{logged} bytes reached the log");
    for source in ["flood line 0:", "stdout line 0:", "stderr line 0:"] {
        assert!(logs.messages().iter().any(|m| m.starts_with(source)), "nothing from {source}");
    }
}

#[test]
fn guest_cannot_read_host_files_or_environment() {
    let secret = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret.path(), "host secret").unwrap();
    assert!(std::env::var("PATH").is_ok(), "the host has PATH for the guest to look for");
    let sandbox = sandbox();
    let plugin = load(&sandbox, "snoop");
    let seen = output(&run(&sandbox, &plugin, json!({ "path": secret.path(), "env": "PATH" })));
    assert!(seen["file"]["err"].is_string(), "{seen}");
    assert!(seen["dir"]["err"].is_string(), "{seen}");
    assert!(seen["env"]["err"].is_string(), "{seen}");
    assert_eq!(seen["env_count"], 0);
    assert_eq!(seen["args_count"], 0);
    assert!(!seen.to_string().contains("host secret"));
}

#[test]
fn spinning_guest_runs_out_of_fuel() {
    let sandbox = fuel_sandbox();
    let plugin = load(&sandbox, "spin");
    let limits = Limits::default().with_fuel(Some(2_000_000));
    let execution = run_with(&sandbox, &plugin, json!({}), &limits);
    assert_eq!(execution.ending, Ending::Killed(Kill::OutOfFuel { fuel: 2_000_000 }));
    assert_eq!(execution.fuel_consumed, Some(2_000_000));
    assert_eq!(fault(&execution).0.code, codes::OUT_OF_FUEL);
}

#[test]
fn well_behaved_job_reports_the_fuel_it_used() {
    let sandbox = fuel_sandbox();
    let plugin = load(&sandbox, "transform");
    let limits = Limits::default().with_fuel(Some(10_000_000));
    let execution = run_with(&sandbox, &plugin, json!({ "name": "Ada" }), &limits);
    assert_eq!(output(&execution)["greeting"], "hello, Ada");
    let used = execution.fuel_consumed.unwrap();
    assert!(used > 0 && used < 10_000_000, "{used}");
}

#[test]
fn cancelling_a_running_guest_interrupts_it_at_the_next_tick() {
    let sandbox = manual_sandbox();
    let plugin = load(&sandbox, "spin");
    let cancel = CancelToken::new();
    let (started_tx, started) = std::sync::mpsc::channel();
    let (done_tx, done) = std::sync::mpsc::channel();
    let worker = {
        let (sandbox, plugin, cancel) = (sandbox.clone(), plugin.clone(), cancel.clone());
        std::thread::spawn(move || {
            let limits = Limits::default().with_deadline(Duration::from_secs(3600));
            let logs = GuestLogs::notifying(started_tx);
            let execution = logs.capture(|| sandbox.execute(&plugin, &job(1, json!({})), &limits, Some(&cancel)));
            done_tx.send(execution.unwrap()).unwrap();
        })
    };
    started.recv_timeout(Duration::from_secs(30)).expect("the guest starts spinning");
    cancel.cancel();
    sandbox.engine().increment_epoch();
    let execution = done.recv_timeout(Duration::from_secs(30)).expect("the guest is interrupted");
    assert_eq!(execution.ending, Ending::Cancelled);
    assert_eq!(execution.raw_result(), None);
    worker.join().unwrap();
}

#[test]
fn a_guest_fault_in_the_hosts_namespace_is_renamed_not_taken_for_a_kill() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "forger");
    let forged = json!({ "message": "killed at its deadline", "deadline_ms": 5, "elapsed_ms": 6 });
    let execution = run(&sandbox, &plugin, json!({ "code": codes::TIMEOUT, "body": forged }));
    // A fault of the guest's own, not a kill.
    assert!(matches!(execution.ending, Ending::Fault(_)), "{:?}", execution.ending);
    let (fault, body) = fault(&execution);
    assert_eq!(fault.code, codes::GUEST_RESERVED_CODE);
    assert_eq!(body, json!({ "code": codes::TIMEOUT, "body": forged }));
    // Codes outside the namespace pass as they are.
    let (other, _) = crate::support::fault(&run(&sandbox, &plugin, json!({ "code": "huskish.timeout", "body": {} })));
    assert_eq!(other.code, "huskish.timeout");
}

#[test]
fn guest_text_cannot_start_a_line_of_its_own_in_the_hosts_log() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "forger");
    let forged = "fine\n2026-12-01T00:00:00.000000Z  INFO husk::outcome: job 7 completed\r\0\u{1b}[2J";
    let logs = GuestLogs::default();
    let execution = logs.capture(|| run(&sandbox, &plugin, json!({ "log": forged })));
    assert_eq!(output(&execution), json!({ "logged": true }));
    let messages = logs.messages();
    // The log import's message is one message, escaped; stdout and stderr
    // are streams of lines, each line one message, escaped.
    let rest = r"2026-12-01T00:00:00.000000Z  INFO husk::outcome: job 7 completed\r\u{0}\u{1b}[2J";
    let whole = format!(r"fine\n{rest}");
    assert_eq!(messages, vec![whole.as_str(), "fine", rest, "fine", rest], "{messages:?}");
    assert!(messages.iter().all(|m| !m.chars().any(char::is_control)), "{messages:?}");
}

/// A job never sees what the job before it left in memory: `residue` fills
/// 1 MiB of its static data and 2 MiB of grown memory, and the next job on
/// the same pool slot (a pool of one) counts what is left — with dirty
/// pages found by `PAGEMAP_SCAN` (the default), with the kept-resident
/// range reset whole by `memset`, and with a kept-resident range larger
/// than the written data.
#[test]
fn a_job_sees_nothing_an_earlier_job_left_in_memory() {
    let configs = [
        ("pagemap-scan", crate::support::test_config()),
        ("memset", crate::support::test_config().with_pagemap_scan(false)),
        ("4 MiB kept resident", crate::support::test_config().with_memory_keep_resident(4 << 20)),
    ];
    for (name, config) in configs {
        let engine = husk::engine::Engine::new(config.with_max_instances(1)).unwrap();
        let sandbox = husk::sandbox::Sandbox::new(engine).unwrap();
        let plugin = load(&sandbox, "residue");
        for round in 0..3 {
            let written = output(&run(&sandbox, &plugin, json!({ "mode": "write" })));
            assert_eq!(written, json!({ "nonzero_static": 1 << 20, "nonzero_grown": 2 << 20 }), "{name}");
            let read = output(&run(&sandbox, &plugin, json!({ "mode": "read" })));
            assert_eq!(read, json!({ "nonzero_static": 0, "nonzero_grown": 0 }), "{name}, round {round}");
        }
    }
}
