//! husk's WASI preview 1 adapter, attacked by a Go guest
//! (`examples/go/probe`): no file, no environment, no socket reaches the
//! host; a sleep ends at the deadline; the memory cap, fuel and a panic
//! end the job as they do in every language; stdout and stderr reach the
//! job's log.

use std::time::Duration;

use husk::engine::Engine;
use husk::fault::codes;
use husk::plugin::{Plugin, World};
use husk::sandbox::{Ending, Limits, Sandbox};
use serde_json::{Value, json};

use crate::support::{GuestLogs, Language, cached_config, fault, output, run_with};

/// The probe and a sandbox, or `None` without a Go toolchain (outside CI).
fn probe() -> Option<(Sandbox, Plugin)> {
    let path = Language::Go.guest("probe")?;
    // Fuel metered, for the fuel test; unlimited where a test sets none.
    // The shared compile cache: the probe takes seconds to compile.
    let sandbox = Sandbox::new(Engine::new(cached_config().with_fuel(true)).unwrap()).unwrap();
    let plugin = sandbox.load(&path, World::Operation).unwrap();
    Some((sandbox, plugin))
}

fn tried(sandbox: &Sandbox, plugin: &Plugin, input: Value) -> Value {
    output(&run_with(sandbox, plugin, input, &Limits::default()))
}

#[test]
#[cfg_attr(not(husk_guests_go), ignore = "no go guest toolchain: run scripts/build-guests go")]
fn files_environment_and_sockets_are_out_of_reach() {
    let Some((sandbox, probe)) = probe() else { return };
    // Every file call is refused as a missing capability: no preopens.
    let files = tried(&sandbox, &probe, json!({ "try": "files" }));
    for call in ["read", "list", "write", "stat"] {
        let error = files[call].as_str().unwrap();
        assert!(error.contains("Capabilities insufficient"), "{call}: {files}");
    }
    assert_eq!(tried(&sandbox, &probe, json!({ "try": "env" })), json!({ "environ": 0, "args": 0 }));

    // A dial to a real listener on the host never arrives: Go's wasip1 net
    // package is an in-process simulation, and the adapter has no socket
    // call that reaches the host (sock_* are EBADF).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let sockets = tried(&sandbox, &probe, json!({ "try": "sockets", "addr": addr }));
    assert!(!sockets["dial"].as_str().unwrap().is_empty(), "{sockets}");
    assert!(!sockets["lookup"].as_str().unwrap().is_empty(), "{sockets}");
    let accepted = listener.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "nothing connected: {accepted:?}"
    );
}

#[test]
#[cfg_attr(not(husk_guests_go), ignore = "no go guest toolchain: run scripts/build-guests go")]
fn sleeps_and_goroutines_run_and_a_long_sleep_ends_at_the_deadline() {
    let Some((sandbox, probe)) = probe() else { return };
    let slept = tried(&sandbox, &probe, json!({ "try": "sleep", "ms": 20 }));
    assert!(slept["slept_ms"].as_i64().unwrap() >= 20, "poll_oneoff waited the whole sleep: {slept}");
    // In one host wait, not by spinning: a 100 ms sleep fits a fuel budget
    // a few times a bare job's (~1.6 million) that a busy-wait would burn.
    let fuel = Limits::default().with_fuel(Some(10_000_000));
    let waited = run_with(&sandbox, &probe, json!({ "try": "sleep", "ms": 100 }), &fuel);
    assert!(output(&waited)["slept_ms"].as_i64().unwrap() >= 100, "{waited:?}");
    let summed = tried(&sandbox, &probe, json!({ "try": "goroutines", "n": 100 }));
    assert_eq!(summed, json!({ "sum": 4950 }));

    // An hour's sleep, inside one host wait: killed at the deadline.
    let limits = Limits::default().with_deadline(Duration::from_millis(200));
    let killed = run_with(&sandbox, &probe, json!({ "try": "sleep", "ms": 3_600_000 }), &limits);
    assert_eq!(fault(&killed).0.code, codes::TIMEOUT, "{killed:?}");
    assert!(killed.elapsed < Duration::from_secs(30), "ended near its deadline: {:?}", killed.elapsed);
}

#[test]
#[cfg_attr(not(husk_guests_go), ignore = "no go guest toolchain: run scripts/build-guests go")]
fn memory_fuel_and_panics_end_the_job() {
    let Some((sandbox, probe)) = probe() else { return };
    // Go's heap lives in the one linear memory: 40 MB fits the default
    // 64 MiB cap, 200 MB does not.
    assert_eq!(tried(&sandbox, &probe, json!({ "try": "alloc", "mb": 40 })), json!({ "mb": 40 }));
    let capped = run_with(&sandbox, &probe, json!({ "try": "alloc", "mb": 200 }), &Limits::default());
    assert_eq!(fault(&capped).0.code, codes::MEMORY_LIMIT, "{capped:?}");

    let fuel = Limits::default().with_fuel(Some(5_000_000));
    let spent = run_with(&sandbox, &probe, json!({ "try": "goroutines", "n": 100_000 }), &fuel);
    assert_eq!(fault(&spent).0.code, codes::OUT_OF_FUEL, "{spent:?}");

    // A panic: Go prints its trace to stderr and exits; the job is a trap
    // whose body carries the trace.
    let panicked = run_with(&sandbox, &probe, json!({ "try": "panic" }), &Limits::default());
    let (panic, body) = fault(&panicked);
    assert_eq!(panic.code, codes::TRAP, "{panicked:?}");
    let trace = body["guest_message"].as_str().unwrap();
    assert!(trace.contains("panic: probe panics") && trace.contains("probe.go"), "{body}");
}

#[test]
#[cfg_attr(not(husk_guests_go), ignore = "no go guest toolchain: run scripts/build-guests go")]
fn stdout_and_stderr_reach_the_jobs_log_in_writes_of_any_size() {
    let Some((sandbox, probe)) = probe() else { return };
    let logs = GuestLogs::default();
    // 10,000 bytes: more than one 4096-byte blocking write.
    let printed =
        logs.capture(|| run_with(&sandbox, &probe, json!({ "try": "print", "bytes": 10_000 }), &Limits::default()));
    assert!(matches!(printed.ending, Ending::Returned(_)), "{printed:?}");
    let messages = logs.messages();
    let stdout: usize = messages.iter().filter(|m| m.chars().all(|c| c == 'o')).map(|m| m.len()).sum();
    assert_eq!(stdout, 10_000, "every byte written to stdout is logged");
    assert!(messages.iter().any(|m| m == "probe to stderr"), "{messages:?}");
    // The log counts message bytes; a line's newline is not one of them.
    assert_eq!(printed.log.bytes_written, 10_000 + "probe to stderr".len() as u64);
}
