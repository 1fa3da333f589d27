//! Building a host: every bad topic is refused at build, naming the topic.

use husk::classify::Rule;
use husk::{Host, HostError, MapperSpec, PluginSource, Topic};

use crate::support::{guest, test_config};

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
