//! Building a host: every bad topic is refused at build, naming the topic;
//! a host on a store with the queue alone.

use std::sync::Arc;
use std::time::Duration;

use husk::classify::Rule;
use husk::dispatch::EnqueueError;
use husk::outcome::Outcome;
use husk::retry::RetryPolicySpec;
use husk::store::{ListFilter, MemoryStore, StoreError};
use husk::{Host, HostError, MapperSpec, PluginSource, Topic};

use crate::rig::CoreOnly;
use crate::support::{guest, test_config};
use crate::support_sink::WaitingSink;

fn build(topics: Vec<Topic>) -> Result<Host, HostError> {
    topics.into_iter().fold(Host::builder().engine(test_config()).start_workers(false), |b, t| b.topic(t)).build()
}

fn source(name: &str) -> PluginSource {
    PluginSource::Path(guest(name))
}

#[test]
fn bad_topics_are_refused_naming_the_topic() {
    let error = build(vec![Topic::wasm("t", source("transform")), Topic::wasm("t", source("flaky"))]).unwrap_err();
    assert!(error.to_string().contains("`t` is registered twice"), "{error}");

    let error = build(vec![Topic::wasm("greet", source("mapper"))]).unwrap_err();
    assert!(matches!(&error, HostError::Plugin { topic, .. } if topic == "greet"), "{error}");

    let error = build(vec![Topic::wasm("greet", source("transform")).with_mapper(MapperSpec::SamePlugin)]).unwrap_err();
    assert!(error.to_string().contains("does not export `classify`"), "{error}");

    let error = build(vec![Topic::wasm("pay", source("business")).with_mapper(MapperSpec::Plugin(source("flaky")))])
        .unwrap_err();
    assert!(matches!(&error, HostError::Plugin { topic, .. } if topic == "pay"), "{error}");

    let rule: Rule = serde_json::from_value(serde_json::json!({ "code": "[", "classify_as": "technical" })).unwrap();
    let error =
        build(vec![Topic::wasm("pay", source("business")).with_mapper(MapperSpec::Rules(vec![rule]))]).unwrap_err();
    assert!(matches!(&error, HostError::Rules { topic, .. } if topic == "pay"), "{error}");
}

#[test]
fn a_good_host_registers_its_topics() {
    let host = build(vec![
        Topic::wasm("greet", source("transform")),
        Topic::wasm("pay", source("business")).with_mapper(MapperSpec::SamePlugin),
    ])
    .unwrap();
    assert!(host.enqueue("greet", "{}").is_ok());
    assert!(host.enqueue("pay", "{}").is_ok());
    assert!(host.enqueue("nope", "{}").is_err());
}

/// A host on a store that is a queue and nothing more (`rig::CoreOnly`)
/// runs jobs — retried, completed, ended as incidents — and refuses by name
/// what the store does not support, instead of pretending.
#[test]
fn a_host_on_a_store_with_the_queue_alone_runs_jobs_and_names_what_it_lacks() {
    let sink = Arc::new(WaitingSink::default());
    let host = Host::builder()
        .engine(test_config())
        .store(Arc::new(CoreOnly(MemoryStore::new())))
        .sink(sink.clone())
        .default_retry(RetryPolicySpec::Fixed { max_attempts: 2, delay: Duration::from_millis(5) })
        .topic(Topic::wasm("flaky", source("flaky")))
        .build()
        .unwrap();
    let retried = host.enqueue("flaky", r#"{"succeed_on_attempt": 2}"#).unwrap();
    let failed = host.enqueue("flaky", r#"{"succeed_on_attempt": 3}"#).unwrap();
    let outcomes = sink.wait_for(2, Duration::from_secs(60));
    let of = |id| outcomes.iter().find(|o| o.job_id == id).unwrap();
    assert!(matches!(of(retried).outcome, Outcome::Completed { .. }), "{:?}", of(retried));
    assert!(matches!(of(failed).outcome, Outcome::Failed { attempts: 2, .. }), "{:?}", of(failed));
    assert_eq!(host.job(retried).unwrap().unwrap().attempts.len(), 2, "the retried job's history");
    assert_eq!(host.outcomes_after(0, 10).unwrap().len(), 2);
    let unsupported = |result: Result<_, StoreError>, capability: &str| match result {
        Err(StoreError::Unsupported { capability: named }) => assert_eq!(named, capability),
        other => panic!("expected {capability} unsupported, got {other:?}"),
    };
    unsupported(host.incidents().map(drop), "incidents");
    unsupported(host.retry_incident(failed).map(drop), "incidents");
    unsupported(host.jobs(&ListFilter::default()).map(drop), "queries");
    // A job's page shows its record; the input is one such a store keeps
    // none of, not a failure of the page.
    assert_eq!(host.input(retried).unwrap(), None);
    assert!(matches!(host.set_paused("flaky", true), Err(EnqueueError::Store(StoreError::Unsupported { .. }))));
    assert_eq!(host.paused().unwrap(), Vec::<String>::new(), "nothing can be paused");
    assert_eq!(host.pruned_through().unwrap(), 0, "nothing pruned");
    host.shutdown();
}
