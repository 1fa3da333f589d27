//! Guests blocked in a host call, where no WebAssembly runs for the epoch
//! deadline to interrupt: a WASI sleep, a poll of a pollable that never
//! becomes ready, an error mapper that sleeps. Each ends at the first epoch
//! tick past its deadline (or after its cancel), and the thread
//! it ran on takes the next job. Epochs are bumped by hand; the waits for a
//! message from the worker thread only bound how long a broken build would
//! hang.
//!
//! What ends such a wait is the watchdog of `guest::waits`, and only it: a
//! test ticks the epoch (or cancels) only once the guest is blocked in its
//! host call — husk's trace event of target `husk::waits` says so — when no
//! WebAssembly runs for the epoch deadline to stop it. (Ticking as soon as
//! the guest logged `sleeping` raced the few instructions it runs before
//! its call: the epoch deadline, which makes the same check, often stopped
//! it there with the same error, and the tests passed with the watchdog
//! broken.)

use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

use husk::classify::{Classification, ErrorMapper};
use husk::fault::{Fault, codes};
use husk::plugin::World;
use husk::sandbox::{CancelToken, Ending, Execution, Kill, Limits, Sandbox};
use serde_json::{Value, json};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

use crate::support::{GuestLogs, fault, job, load, load_as, manual_sandbox, output};

/// How long a test waits for something the worker thread must do.
const PATIENCE: Duration = Duration::from_secs(30);

/// The target of the trace event husk logs when a guest's host call
/// blocks (`guest::runtime`).
const BLOCKS_TARGET: &str = "husk::waits";

/// What [`signalling`] sends when a guest's host call blocks.
const BLOCKED: &str = "(blocked in a host call)";

/// Sends [`BLOCKED`] at each of husk's events saying a host call blocks.
struct Blocks(Sender<String>);

impl<S: tracing::Subscriber> Layer<S> for Blocks {
    fn on_event(&self, event: &tracing::Event<'_>, _cx: Context<'_, S>) {
        if event.metadata().target() == BLOCKS_TARGET {
            let _ = self.0.send(BLOCKED.to_owned());
        }
    }
}

/// Runs `f`, sending to `signals` what the guests it runs log, and
/// [`BLOCKED`] whenever one blocks in a host call.
fn signalling<R>(signals: Sender<String>, f: impl FnOnce() -> R) -> R {
    let subscriber = tracing_subscriber::registry().with(GuestLogs::notifying(signals.clone())).with(Blocks(signals));
    tracing::subscriber::with_default(subscriber, f)
}

/// Returns once the guest has logged `sleeping` and then blocked in its host
/// call: from then on, no WebAssembly runs until that call returns.
fn blocked_in_its_host_call(signals: &Receiver<String>) {
    assert_eq!(signals.recv_timeout(PATIENCE).expect("the guest starts sleeping"), "sleeping");
    assert_eq!(signals.recv_timeout(PATIENCE).expect("the guest blocks in its host call"), BLOCKED);
}

/// Runs `sleeper` with `input` on a thread of its own, then `transform` on
/// the same thread; returns the channel of their executions once the
/// sleeper is blocked in its host call.
fn sleeping(
    sandbox: &Sandbox,
    input: Value,
    limits: &Limits,
    cancel: Option<CancelToken>,
) -> (Receiver<Execution>, std::thread::JoinHandle<()>) {
    let sleeper = load(sandbox, "sleeper");
    let transform = load(sandbox, "transform");
    let (signals_tx, signals) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let worker = {
        let (sandbox, limits) = (sandbox.clone(), limits.clone());
        std::thread::spawn(move || {
            let slept =
                signalling(signals_tx, || sandbox.execute(&sleeper, &job(1, input), &limits, cancel.as_ref()).unwrap());
            done_tx.send(slept).unwrap();
            let next = sandbox.execute(&transform, &job(1, json!({ "name": "next" })), &limits, None).unwrap();
            done_tx.send(next).unwrap();
        })
    };
    blocked_in_its_host_call(&signals);
    (done, worker)
}

/// Ticks the epoch through `limits`' deadline and returns how the run
/// ended. (That a bound stops a run at its deadline tick and not before is
/// `guest::waits`' own test; here, the waits it bounds.)
fn killed_at_the_deadline_tick(sandbox: &Sandbox, done: &Receiver<Execution>, limits: &Limits) -> Execution {
    for _ in 0..sandbox.engine().ticks_for(limits.deadline) {
        sandbox.engine().increment_epoch();
    }
    done.recv_timeout(PATIENCE).expect("killed at the deadline tick")
}

fn assert_timeout(execution: &Execution, limits: &Limits) {
    assert!(
        matches!(execution.ending, Ending::Killed(Kill::Timeout { deadline, .. }) if deadline == limits.deadline),
        "{:?}",
        execution.ending
    );
    let (fault, body) = fault(execution);
    assert_eq!(fault.code, codes::TIMEOUT);
    assert_eq!(body["deadline_ms"], limits.deadline.as_millis() as u64 as f64);
}

#[test]
fn a_guest_sleeping_through_wasi_is_killed_at_its_deadline_tick() {
    let sandbox = manual_sandbox();
    let limits = Limits::default().with_deadline(Duration::from_millis(50));
    let (done, worker) = sleeping(&sandbox, json!({ "sleep_ms": 3_600_000 }), &limits, None);
    let slept = killed_at_the_deadline_tick(&sandbox, &done, &limits);
    assert_timeout(&slept, &limits);
    let next = done.recv_timeout(PATIENCE).expect("the next job runs on the same thread");
    assert_eq!(output(&next)["greeting"], "hello, next");
    worker.join().unwrap();
}

#[test]
fn a_guest_polling_a_pollable_that_is_never_ready_is_killed_at_its_deadline_tick() {
    let sandbox = manual_sandbox();
    let limits = Limits::default().with_deadline(Duration::from_millis(30));
    let (done, worker) = sleeping(&sandbox, json!({ "never": true }), &limits, None);
    let polled = killed_at_the_deadline_tick(&sandbox, &done, &limits);
    assert_timeout(&polled, &limits);
    assert_eq!(output(&done.recv_timeout(PATIENCE).unwrap())["greeting"], "hello, next");
    worker.join().unwrap();
}

#[test]
fn cancelling_a_guest_blocked_in_a_host_call_ends_it_by_the_next_tick() {
    let sandbox = manual_sandbox();
    let limits = Limits::default().with_deadline(Duration::from_secs(3600));
    let cancel = CancelToken::new();
    let (done, worker) = sleeping(&sandbox, json!({ "never": true }), &limits, Some(cancel.clone()));
    cancel.cancel();
    // Seen by the wait's watchdog at the next tick.
    sandbox.engine().increment_epoch();
    let cancelled = done.recv_timeout(PATIENCE).expect("ended by the tick after the cancel");
    assert_eq!(cancelled.ending, Ending::Cancelled);
    assert_eq!(output(&done.recv_timeout(PATIENCE).unwrap())["greeting"], "hello, next");
    worker.join().unwrap();
}

#[test]
fn an_error_mapper_sleeping_through_wasi_is_cut_off_and_the_fault_is_technical() {
    let sandbox = manual_sandbox();
    let plugin = load_as(&sandbox, "bad-mapper", World::ErrorMapper);
    let limits = Limits::error_mapper().with_fuel(None);
    let mapper = ErrorMapper::Wasm { sandbox: sandbox.clone(), plugin, limits: limits.clone() };
    let (signals_tx, signals) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let classifier = std::thread::spawn(move || {
        let sleeping = signalling(signals_tx, || mapper.classify(&Fault::new("sleep", Vec::new())));
        done_tx.send(sleeping).unwrap();
        // The same thread classifies the next fault.
        done_tx.send(mapper.classify(&Fault::new("other", Vec::new()))).unwrap();
    });
    blocked_in_its_host_call(&signals);
    for _ in 0..sandbox.engine().ticks_for(limits.deadline) {
        sandbox.engine().increment_epoch();
    }
    match done.recv_timeout(PATIENCE).expect("cut off at its deadline") {
        Classification::Technical { diagnostic } => {
            assert!(diagnostic.contains(codes::TIMEOUT) && diagnostic.contains("sleep"), "{diagnostic}")
        }
        other => panic!("expected technical, got {other:?}"),
    }
    let next = done.recv_timeout(PATIENCE).expect("the next classification");
    assert_eq!(next, Classification::technical("bad-mapper saw other"));
    classifier.join().unwrap();
}

/// A `husk serve` with a sleeper topic killed at 300 ms, one held for an
/// hour, and the forger classified by the bad mapper (1 s mapper deadline).
fn serve_config() -> String {
    format!(
        r#"store = "husk.db"
epoch_tick = "10ms"
shutdown_grace = "300ms"

[tenants.a]
tokens = ["sha256:{hash}"]

[topics.nap]
tenant = "a"
plugin = "{sleeper}"
workers = 1
deadline = "300ms"
retry = {{ kind = "none" }}

[topics.hold]
tenant = "a"
plugin = "{sleeper}"
workers = 1
deadline = "1h"
retry = {{ kind = "none" }}

[topics.forge]
tenant = "a"
plugin = "{forger}"
workers = 1
retry = {{ kind = "none" }}
mapper = "{bad_mapper}"
mapper_deadline = "1s"
"#,
        hash = husk_server::tokens::token_hash(crate::support_server::TOKEN_A),
        sleeper = crate::support::guest("sleeper").display(),
        forger = crate::support::guest("forger").display(),
        bad_mapper = crate::support::guest("bad-mapper").display(),
    )
}

#[test]
fn husk_serve_ends_jobs_and_mappers_blocked_in_host_calls_and_stops_at_sigterm() {
    use crate::support_server::{Server, TOKEN_A, ended, enqueue, job_state};
    let server = Server::process(&serve_config());
    let a = server.client(Some(TOKEN_A));
    let finished = |topic: &str, input: Value| {
        let id = enqueue(&a, topic, &input).unwrap()["id"].clone();
        server.wait_until(&format!("{topic} {input} ends"), |_| ended(&job_state(&a, &id)));
        job_state(&a, &id)
    };

    // Killed at its deadline, and the topic's one worker takes the next job.
    let job = finished("nap", json!({ "sleep_ms": 3_600_000 }));
    assert_eq!(job["outcome"]["kind"], "failed", "{job}");
    assert_eq!(job["outcome"]["last_fault"]["code"], codes::TIMEOUT, "{job}");
    assert_eq!(finished("nap", json!({ "never": true }))["outcome"]["last_fault"]["code"], codes::TIMEOUT);
    assert_eq!(finished("nap", json!({ "sleep_ms": 0 }))["outcome"]["kind"], "completed");

    // A mapper sleeping through WASI is cut off at its deadline (1 s here,
    // not the default 100 ms, so the 10 MB message below is not cut off
    // by the deadline first on a loaded machine).
    let job = finished("forge", json!({ "code": "sleep", "body": {} }));
    let diagnostic = job["outcome"]["diagnostic"].as_str().unwrap().to_owned();
    assert!(diagnostic.contains(codes::TIMEOUT), "{job}");
    // A mapper's 10 MB message is neither stored nor delivered.
    let job = finished("forge", json!({ "code": "huge", "body": { "field": "message", "bytes": 10_000_000 } }));
    assert_eq!(job["outcome"]["kind"], "failed", "a technical fault, not the business error");
    assert!(job["outcome"]["diagnostic"].as_str().unwrap().contains("husk.output-too-large"), "{job}");
    assert!(job.to_string().len() < 64 << 10, "the job is {} bytes", job.to_string().len());
    // A guest's forged kill is recorded as the guest's own fault.
    let job = finished("forge", json!({ "code": codes::TIMEOUT, "body": { "deadline_ms": 5 } }));
    let last_fault = &job["outcome"]["last_fault"];
    assert_eq!(last_fault["code"], codes::GUEST_RESERVED_CODE, "{job}");
    assert_eq!(last_fault["body"], json!({ "code": codes::TIMEOUT, "body": { "deadline_ms": 5 } }));

    // A cancel reaches a job waiting forever in a host call.
    let id = enqueue(&a, "hold", &json!({ "never": true })).unwrap()["id"].clone();
    server.wait_until("the held job runs", |_| job_state(&a, &id)["state"] == "running");
    assert_eq!(a.post(&format!("/v1/jobs/{id}/cancel"), None, &[]).unwrap()["result"], "cancelling");
    server.wait_until("the held job is cancelled", |_| ended(&job_state(&a, &id)));
    assert_eq!(job_state(&a, &id)["outcome"]["kind"], "cancelled");

    // SIGTERM: the grace period ends a job waiting forever, husk exits, and
    // the job goes back to the queue on the attempt it was on.
    let id = enqueue(&a, "hold", &json!({ "never": true })).unwrap()["id"].clone();
    server.wait_until("the second held job runs", |_| job_state(&a, &id)["state"] == "running");
    let (status, dir) = server.terminate();
    assert!(status.success(), "husk serve exited with {status} after SIGTERM");
    let store = husk_sqlite::SqliteStore::open(&dir.path().join("husk.db"), husk_sqlite::Durability::Normal).unwrap();
    let record = husk::store::JobStore::get(&store, husk::store::JobId(id.as_u64().unwrap())).unwrap().unwrap();
    assert_eq!(record.state, husk::store::JobState::Queued, "released");
    assert_eq!(record.attempt, 1, "the attempt was not spent");
}
