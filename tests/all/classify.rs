//! Classification: declarative rules and Wasm mappers that misbehave.

use std::time::Duration;

use husk::classify::{Classification, ErrorMapper, Rule, Rules};
use husk::engine::{Engine, EngineConfig};
use husk::fault::Fault;
use husk::plugin::World;
use husk::sandbox::{Limits, Sandbox};
use serde_json::json;

use crate::rig::rules;
use crate::support::{load_as, mapper_limits, test_config};

#[test]
fn rules_match_by_code_glob_and_body_pointer() {
    let mapper = rules(json!([
        { "code": "payment.*", "pointer": "/reason", "equals": "insufficient-funds",
          "classify_as": "business-error", "message": "no money" },
        { "pointer": "/status", "classify_as": "business-status" },
        { "code": "http.4??", "classify_as": "technical-non-retryable" },
        { "code": "http.*", "classify_as": "technical", "message": "upstream" },
    ]));
    let classify = |code: &str, body: serde_json::Value| mapper.classify(&Fault::json(code, &body));
    assert_eq!(
        classify("payment.declined", json!({ "reason": "insufficient-funds" })),
        Classification::BusinessError { code: "insufficient-funds".into(), message: "no money".into() }
    );
    // Same code, other reason: the first rule does not match; no status either.
    assert!(matches!(classify("payment.declined", json!({ "reason": "fraud" })), Classification::Technical { .. }));
    assert_eq!(
        classify("anything", json!({ "status": "on-hold" })),
        Classification::BusinessStatus { value: "on-hold".into() }
    );
    assert!(matches!(classify("http.404", json!(null)), Classification::TechnicalNonRetryable { .. }));
    assert_eq!(classify("http.503", json!(null)), Classification::Technical { diagnostic: "upstream".into() });
    let unmatched = mapper.classify(&Fault::new("other", "not json"));
    assert_eq!(unmatched, Classification::technical("no rule matched fault other"));
}

#[test]
fn invalid_glob_is_refused_naming_the_rule() {
    let rule: Rule = serde_json::from_value(json!({ "code": "[oops", "classify_as": "technical" })).unwrap();
    let error = Rules::new(vec![rule]).unwrap_err();
    assert_eq!(error.index, 0);
    assert!(error.to_string().contains("[oops"), "{error}");
}

fn wasm_mapper(config: EngineConfig, limits: Limits) -> ErrorMapper {
    let sandbox = Sandbox::new(Engine::new(config).unwrap()).unwrap();
    let plugin = load_as(&sandbox, "bad-mapper", World::ErrorMapper);
    ErrorMapper::Wasm { sandbox, plugin, limits }
}

#[test]
fn a_wasm_mapper_that_loops_is_cut_off_by_fuel() {
    // Fuel, not the deadline, must end it: a long deadline so that a
    // starved thread cannot reach the deadline first.
    let limits = Limits::error_mapper().with_deadline(Duration::from_secs(60));
    let mapper = wasm_mapper(test_config().with_fuel(true), limits);
    match mapper.classify(&Fault::new("spin", "")) {
        Classification::Technical { diagnostic } => {
            assert!(diagnostic.contains("husk.out-of-fuel"), "{diagnostic}");
        }
        other => panic!("expected technical, got {other:?}"),
    }
    assert_eq!(mapper.classify(&Fault::new("fine", "")), Classification::technical("bad-mapper saw fine"));
}

#[test]
fn a_wasm_mapper_that_loops_is_cut_off_at_its_deadline() {
    let limits = Limits::error_mapper().with_fuel(None);
    let mapper = wasm_mapper(test_config(), limits);
    match mapper.classify(&Fault::new("spin", "")) {
        Classification::Technical { diagnostic } => assert!(diagnostic.contains("husk.timeout"), "{diagnostic}"),
        other => panic!("expected technical, got {other:?}"),
    }
}

#[test]
fn a_wasm_mapper_that_panics_yields_technical() {
    let mapper = wasm_mapper(test_config(), mapper_limits());
    match mapper.classify(&Fault::new("panic", "")) {
        Classification::Technical { diagnostic } => assert!(diagnostic.contains("husk.trap"), "{diagnostic}"),
        other => panic!("expected technical, got {other:?}"),
    }
}

#[test]
fn a_wasm_mapper_returning_more_than_its_cap_in_any_field_yields_technical_naming_the_cap() {
    let limits = mapper_limits();
    let cap = limits.max_output;
    assert_eq!(cap, 64 << 10);
    let mapper = wasm_mapper(test_config(), limits);
    let huge =
        |field: &str, bytes: u64| mapper.classify(&Fault::json("huge", &json!({ "field": field, "bytes": bytes })));
    // A 10 MB business error message, and each other field past the cap.
    for (field, bytes) in [("message", 10_000_000), ("code", cap + 1), ("status", cap + 1), ("diagnostic", cap + 1)] {
        match huge(field, bytes) {
            Classification::Technical { diagnostic } => {
                assert!(diagnostic.contains("husk.output-too-large"), "{field}: {diagnostic}");
                assert!(diagnostic.contains(&cap.to_string()), "{field}: names the cap: {diagnostic}");
                assert!(diagnostic.len() < 1024, "{field}: the diagnostic is short");
            }
            other => {
                panic!("{field}: expected technical, got a classification of {} bytes", format!("{other:?}").len())
            }
        }
    }
    // At the cap, the classification stands.
    match huge("message", cap) {
        Classification::BusinessError { code, message } => {
            assert_eq!((code.as_str(), message.len() as u64), ("huge", cap))
        }
        other => panic!("expected the business error, got {other:?}"),
    }
}
