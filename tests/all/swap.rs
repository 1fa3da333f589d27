//! Hot swap: 100 deploys alternating two versions while 10,000 jobs run;
//! a fetched batch runs on the version current at its fetch; a version that
//! fails validation is refused and the old one stays; rollback.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use husk::outcome::Outcome;
use husk::sandbox::{CancelToken, Limits};
use husk::store::{JobId, Lock, LockedJob};
use husk::versions::Origin;
use husk::worker::{Handler, WasmHandler};
use husk::{Enqueue, Host, PluginSource, Topic};
use serde_json::{Value, json};

use crate::support::{guest, load, sandbox, test_config};
use crate::support_sink::WaitingSink;

const JOBS: usize = 10_000;
const DEPLOYS: usize = 100;

fn version_tag(output: &[u8]) -> String {
    serde_json::from_slice::<Value>(output).unwrap()["version"].as_str().unwrap().to_owned()
}

#[test]
fn a_hundred_deploys_under_load_fail_no_job_and_each_attempt_records_its_version() {
    let cache = tempfile::tempdir().unwrap();
    let sink = Arc::new(WaitingSink::default());
    let engine = crate::support::test_config().with_cache_dir(Some(cache.path().to_owned()));
    let host = Host::builder()
        .engine(engine)
        .sink(sink.clone())
        .topic(Topic::wasm("quote", PluginSource::Path(guest("quote-v1"))).with_workers(2).with_fetch_batch(8))
        .build()
        .unwrap();
    // Version 2 compiled into the cache before the jobs start: no deploy in
    // the loop compiles, so the deploys keep pace with the jobs even when a
    // loaded machine makes a compile slow.
    host.sandbox().load(&guest("quote-v2"), husk::plugin::World::Operation).unwrap();
    let inputs: Vec<Vec<u8>> =
        (0..JOBS).map(|i| json!({ "amount": i, "currency": "EUR" }).to_string().into_bytes()).collect();
    host.submit(Enqueue::many("quote", inputs)).unwrap();
    // Deploy k waits for 90·k outcomes, so the deploys spread over the run
    // instead of racing ahead of it.
    let mut digests = HashMap::new();
    for k in 0..DEPLOYS {
        let wanted = 90 * k;
        sink.wait_len(wanted, Duration::from_secs(300));
        let name = if k % 2 == 0 { "quote-v2" } else { "quote-v1" };
        let info = host.deploy("quote", &PluginSource::Path(guest(name)), Origin::Deploy).unwrap();
        digests.insert(info.version.clone(), if k % 2 == 0 { "v2" } else { "v1" });
    }
    let deployed_before_end = sink.len();
    assert!(deployed_before_end < JOBS, "the deploys ended after the jobs ({deployed_before_end})");
    let outcomes = sink.wait_for(JOBS, Duration::from_secs(300));
    let mut ran = HashMap::new();
    for outcome in &outcomes {
        let Outcome::Completed { output } = &outcome.outcome else {
            panic!("job {} did not complete: {:?}", outcome.job_id, outcome.outcome)
        };
        let record = host.job(outcome.job_id).unwrap().unwrap();
        let faults: Vec<_> = record.attempts.iter().map(|a| a.fault.as_ref().map(|f| f.code.clone())).collect();
        assert_eq!(outcome.attempts, 1, "job {} needed a retry; faults {faults:?}", outcome.job_id);
        assert_eq!(record.attempts.len(), 1);
        let recorded = record.attempts[0].plugin_version.clone().expect("the attempt records its version");
        // The version recorded is the one that ran the job (its output says
        // which build it is).
        assert_eq!(digests.get(&recorded).copied(), Some(version_tag(output).as_str()), "job {}", outcome.job_id);
        *ran.entry(recorded).or_insert(0) += 1;
    }
    assert_eq!(outcomes.len(), JOBS);
    assert_eq!(ran.len(), 2, "both versions ran jobs: {ran:?}");
    assert!(ran.values().all(|n| *n >= 100), "{ran:?}");
    let versions = host.versions("quote").unwrap();
    assert_eq!(versions.len(), 2, "the two versions are kept once each: {versions:?}");
    assert_eq!(digests[&versions[0].version], "v1", "the last deploy (v1) is current");
}

/// On a store that keeps no versions the process's own log does what the
/// store does: a rollback moves the current pointer back along the deploy
/// order, and a second one has nowhere further back to go.
#[test]
fn a_rollback_in_a_store_without_versions_walks_back_the_deploy_order() {
    let host = Host::builder()
        .engine(test_config())
        .store(Arc::new(crate::rig::CoreOnly(husk::store::MemoryStore::new())))
        .topic(Topic::wasm("quote", PluginSource::Path(guest("quote-v1"))).with_workers(1))
        .build()
        .unwrap();
    let v1 = host.versions("quote").unwrap()[0].version.clone();
    let v2 = host.deploy("quote", &PluginSource::Path(guest("quote-v2")), Origin::Deploy).unwrap().version;
    let back = host.rollback_by("quote", None, Some("tenant-a")).unwrap();
    assert_eq!((back.version.clone(), back.origin), (v1.clone(), Origin::Config));
    assert_eq!(back.rolled_back.and_then(|r| r.by).as_deref(), Some("tenant-a"));
    assert!(host.rollback("quote", None).is_err(), "nothing before v1");
    let listed: Vec<(String, bool)> =
        host.versions("quote").unwrap().into_iter().map(|v| (v.version, v.current)).collect();
    assert_eq!(listed, [(v2.clone(), false), (v1.clone(), true)], "the deploy order stays");
    assert_eq!(host.rollback("quote", Some(&v2[..12])).unwrap().version, v2, "forward by name");
    assert!(host.versions("quote").unwrap()[0].rolled_back.is_some());
    host.shutdown();
}

fn locked(input: Value) -> LockedJob {
    LockedJob {
        lock: Lock { job: JobId(1), token: 1 },
        topic: "quote".into(),
        input: input.to_string().into_bytes(),
        attempt: 1,
        policy: Default::default(),
        enqueued_at: std::time::SystemTime::now(),
        lock_expires_at: std::time::SystemTime::now(),
        priority: 0,
    }
}

#[test]
fn a_pinned_batch_runs_on_the_version_current_at_its_fetch() {
    let sandbox = sandbox();
    let (v1, v2) = (load(&sandbox, "quote-v1"), load(&sandbox, "quote-v2"));
    let handler = WasmHandler::new(sandbox.clone(), v1.clone(), Limits::default());
    let job = locked(json!({ "amount": 1, "currency": "EUR" }));
    // A worker pins the handler right after its fetch...
    let pinned = handler.pinned().unwrap();
    // ...then a deploy swaps in v2 while the batch waits to run.
    handler.swap(v2.clone());
    let on_pinned = pinned.handle(&job, &CancelToken::default());
    let on_current = handler.handle(&job, &CancelToken::default());
    assert_eq!(on_pinned.plugin_version.as_deref(), Some(v1.digest()));
    assert_eq!(on_current.plugin_version.as_deref(), Some(v2.digest()));
    let tag = |handled: &husk::worker::Handled| match &handled.ending {
        husk::sandbox::Ending::Returned(output) => version_tag(output),
        other => panic!("{other:?}"),
    };
    assert_eq!((tag(&on_pinned), tag(&on_current)), ("v1".to_owned(), "v2".to_owned()));
}

#[test]
fn an_invalid_version_is_refused_and_rollback_restores_the_previous_one() {
    let host = Host::builder()
        .engine(test_config())
        .topic(Topic::wasm("quote", PluginSource::Path(guest("quote-v1"))).with_workers(1))
        .build()
        .unwrap();
    let v1 = host.versions("quote").unwrap()[0].version.clone();
    let garbage = PluginSource::Bytes { bytes: b"\0asm garbage".to_vec(), name: "garbage".into() };
    assert!(host.deploy("quote", &garbage, Origin::Deploy).is_err());
    // A component of the wrong world (an error mapper) is refused too.
    assert!(host.deploy("quote", &PluginSource::Path(guest("mapper")), Origin::Deploy).is_err());
    let versions = host.versions("quote").unwrap();
    assert_eq!((versions.len(), versions[0].version.clone(), versions[0].current), (1, v1.clone(), true));
    let v2 = host.deploy("quote", &PluginSource::Path(guest("quote-v2")), Origin::Deploy).unwrap().version;
    assert_ne!(v2, v1);
    let back = host.rollback("quote", None).unwrap();
    assert_eq!((back.version.clone(), back.origin), (v1.clone(), Origin::Config), "its own origin kept");
    assert!(back.rolled_back.is_some());
    assert!(host.rollback("quote", None).is_err(), "nothing deployed before v1: a second rollback does not go forward");
    let listed: Vec<(String, bool)> =
        host.versions("quote").unwrap().into_iter().map(|v| (v.version, v.current)).collect();
    assert_eq!(listed, [(v2.clone(), false), (v1.clone(), true)], "the deploy order stays");
    assert_eq!(host.rollback("quote", Some(&v2[..12])).unwrap().version, v2);
    assert!(host.rollback("quote", Some("ffff")).is_err());
    assert!(host.deploy("nope", &garbage, Origin::Deploy).is_err());
}
