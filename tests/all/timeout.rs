//! Deadlines: the epoch deadline kills a runaway guest at its tick and
//! frees the thread it ran on. Epochs are bumped by hand. (Not before its
//! tick: `guest::waits`' own test of the bound both use.)

use std::sync::mpsc;
use std::time::{Duration, Instant};

use husk::fault::codes;
use husk::sandbox::{Ending, Kill, Limits};
use serde_json::json;

use crate::support::{GuestLogs, fault, job, load, manual_sandbox, output};

#[test]
fn infinite_loop_is_killed_at_its_deadline_tick() {
    let sandbox = manual_sandbox();
    let spin = load(&sandbox, "spin");
    let transform = load(&sandbox, "transform");
    let limits = Limits::default().with_deadline(Duration::from_millis(50));
    let ticks = sandbox.engine().ticks_for(limits.deadline);
    assert_eq!(ticks, 5);

    let (started_tx, started) = mpsc::channel();
    let (done_tx, done) = mpsc::channel();
    let worker = {
        let (sandbox, limits) = (sandbox.clone(), limits.clone());
        std::thread::spawn(move || {
            let logs = GuestLogs::notifying(started_tx);
            let spun = logs.capture(|| sandbox.execute(&spin, &job(1, json!({})), &limits, None).unwrap());
            done_tx.send(spun).unwrap();
            // The same thread is free for the next job.
            let next = sandbox.execute(&transform, &job(1, json!({ "name": "next" })), &limits, None).unwrap();
            done_tx.send(next).unwrap();
        })
    };

    started.recv_timeout(Duration::from_secs(30)).expect("the guest starts spinning");
    for _ in 0..ticks {
        sandbox.engine().increment_epoch();
    }
    // Wasmtime sets the next deadline from the epoch at the moment the
    // tick's callback returns, so a tick that lands while the callback runs
    // is seen one tick later. As the engine's ticker does, go on ticking.
    let patience = Instant::now() + Duration::from_secs(30);
    let spun = loop {
        match done.recv_timeout(Duration::from_millis(5)) {
            Ok(spun) => break spun,
            Err(_) if Instant::now() < patience => sandbox.engine().increment_epoch(),
            Err(_) => panic!("not killed after its deadline tick"),
        }
    };
    assert!(matches!(spun.ending, Ending::Killed(Kill::Timeout { deadline, .. }) if deadline == limits.deadline));
    let (fault, body) = fault(&spun);
    assert_eq!(fault.code, codes::TIMEOUT);
    assert_eq!(body["deadline_ms"], 50.0);
    assert!(body["elapsed_ms"].as_f64().unwrap() > 0.0);

    let next = done.recv_timeout(Duration::from_secs(30)).expect("the next job runs on the same thread");
    assert_eq!(output(&next)["greeting"], "hello, next");
    worker.join().unwrap();
}

#[test]
fn deadlines_round_up_to_whole_ticks() {
    let sandbox = manual_sandbox();
    let engine = sandbox.engine();
    assert_eq!(engine.ticks_for(Duration::from_millis(1)), 1);
    assert_eq!(engine.ticks_for(Duration::from_millis(10)), 1);
    assert_eq!(engine.ticks_for(Duration::from_millis(11)), 2);
    assert_eq!(engine.ticks_for(Duration::ZERO), 1);
}
