//! The well-behaved example guests, through the sandbox.

use husk::contract::{BusinessError, Classification};
use husk::fault::Fault;
use husk::plugin::World;
use husk::sandbox::{Ending, Limits};
use serde_json::json;

use crate::support::{fault, job, load, load_as, mapper_limits, output, run, sandbox};

#[test]
fn transform_returns_its_json_output() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "transform");
    let execution = run(&sandbox, &plugin, json!({ "name": "Ada", "amount": 12.5 }));
    assert_eq!(output(&execution), json!({ "greeting": "hello, Ada", "amount_cents": 1250 }));
}

#[test]
fn transform_rejects_input_that_is_not_its_json() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "transform");
    let (fault, body) = fault(&run(&sandbox, &plugin, json!({ "nom": "Ada" })));
    assert_eq!(fault.code, "invalid-input");
    assert!(body["error"].as_str().unwrap().contains("missing field `name`"), "{body}");
}

#[test]
fn flaky_fails_technically_until_its_attempt_then_succeeds() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "flaky");
    let input = json!({ "succeed_on_attempt": 3 });
    for attempt in 1..3 {
        let execution = sandbox.execute(&plugin, &job(attempt, input.clone()), &Limits::default(), None).unwrap();
        let (fault, body) = fault(&execution);
        assert_eq!(fault.code, "flaky.unavailable");
        assert_eq!(body["attempt"], attempt);
        assert!(execution.log.bytes_written > 0, "flaky logs a warning on failed attempts");
    }
    let execution = sandbox.execute(&plugin, &job(3, input), &Limits::default(), None).unwrap();
    assert_eq!(output(&execution), json!({ "attempt": 3 }));
}

#[test]
fn business_returns_business_faults_and_success() {
    let sandbox = sandbox();
    let plugin = load(&sandbox, "business");
    let (declined, body) = fault(&run(&sandbox, &plugin, json!({ "account": "acme", "amount": 120, "balance": 100 })));
    assert_eq!(declined.code, "payment.declined");
    assert_eq!(body["reason"], "insufficient-funds");
    let (frozen, body) = fault(&run(&sandbox, &plugin, json!({ "account": "frozen", "amount": 1, "balance": 100 })));
    assert_eq!(frozen.code, "account.frozen");
    assert_eq!(body["status"], "frozen");
    let paid = run(&sandbox, &plugin, json!({ "account": "acme", "amount": 30, "balance": 100 }));
    assert_eq!(output(&paid), json!({ "charged": 30, "balance": 70 }));
}

fn classify(name: &str, fault: Fault) -> Classification {
    let sandbox = sandbox();
    let plugin = load_as(&sandbox, name, World::ErrorMapper);
    match sandbox.classify(&plugin, &fault, &mapper_limits()).unwrap().ending {
        Ending::Returned(classification) => classification,
        other => panic!("mapper {name} did not return: {other:?}"),
    }
}

#[test]
fn mapper_classifies_by_code_and_by_body_field() {
    let declined = Fault::json("payment.declined", &json!({ "reason": "insufficient-funds" }));
    assert_eq!(
        classify("mapper", declined),
        Classification::BusinessError(BusinessError {
            code: "insufficient-funds".into(),
            message: "the payment was declined".into()
        })
    );
    let frozen = Fault::json("account.frozen", &json!({ "status": "frozen" }));
    assert_eq!(classify("mapper", frozen), Classification::BusinessStatus("frozen".into()));
    let invalid = Fault::new("validation.missing-field", "");
    assert!(matches!(classify("mapper", invalid), Classification::TechnicalNonRetryable(_)));
    let timeout = Fault::json("husk.timeout", &json!({ "deadline_ms": 10 }));
    assert_eq!(classify("mapper", timeout), Classification::Technical("technical fault husk.timeout".into()));
    let not_json = Fault::new("http.503", "Service Unavailable");
    assert!(matches!(classify("mapper", not_json), Classification::Technical(_)));
}

#[test]
fn one_component_can_be_operation_and_error_mapper() {
    let sandbox = sandbox();
    let as_operation = load(&sandbox, "business");
    assert!(as_operation.is_operation() && as_operation.is_error_mapper());
    let declined = Fault::json("payment.declined", &json!({ "reason": "over-limit" }));
    assert_eq!(
        classify("business", declined),
        Classification::BusinessError(BusinessError {
            code: "over-limit".into(),
            message: "the payment was declined".into()
        })
    );
    assert_eq!(classify("business", Fault::new("account.frozen", "")), Classification::BusinessStatus("frozen".into()));
    let mapper_only = load_as(&sandbox, "mapper", World::ErrorMapper);
    assert!(!mapper_only.is_operation());
}
