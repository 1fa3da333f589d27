//! Guest conformance: the same operations written in Rust, Python,
//! JavaScript, C and Go are held to the same outcomes through the real
//! dispatcher (pools, sandbox, the language's own error mapper, retries),
//! and every language's mapper classifies the same faults the same way.
//!
//! The Python, JavaScript, C and Go guests are built by `scripts/build-guests`
//! (installing a missing toolchain); see `Language::guest`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use husk::contract::{BusinessError, Classification};
use husk::engine::Engine;
use husk::fault::Fault;
use husk::outcome::Outcome;
use husk::plugin::World;
use husk::retry::RetryPolicySpec;
use husk::sandbox::{Ending, Limits, Sandbox};
use husk::{Host, MapperSpec, PluginSource, Topic};
use serde_json::{Value, json};

use crate::support::{GuestLogs, Language, MAPPER_DEADLINE, cached_config, job, mapper_limits};
use crate::support_sink::WaitingSink;

const PATIENCE: Duration = Duration::from_secs(120);
const MAX_ATTEMPTS: u32 = 4;
const RUNAWAY_ATTEMPTS: u32 = 2;

/// What a job must end as.
#[derive(Debug)]
enum Expect {
    Completed { output: Value, attempts: u32 },
    BusinessError(&'static str),
    BusinessStatus(&'static str),
    Failed { code: &'static str, attempts: u32 },
}

/// The table every language's guests are held to: (operation, input,
/// expected outcome).
fn table() -> Vec<(&'static str, Value, Expect)> {
    vec![
        (
            "transform",
            json!({ "name": "Ada", "amount": 12.5 }),
            Expect::Completed { output: json!({ "greeting": "hello, Ada", "amount_cents": 1250 }), attempts: 1 },
        ),
        (
            "transform",
            json!({ "name": "Bob", "amount": -0.125 }),
            Expect::Completed { output: json!({ "greeting": "hello, Bob", "amount_cents": -13 }), attempts: 1 },
        ),
        (
            "transform",
            json!({ "name": "Cy" }),
            Expect::Completed { output: json!({ "greeting": "hello, Cy", "amount_cents": 0 }), attempts: 1 },
        ),
        (
            "transform",
            json!({ "amount": 0, "name": "Aé \"q\" \\ 😀\n\u{1}" }),
            Expect::Completed {
                output: json!({ "greeting": "hello, Aé \"q\" \\ 😀\n\u{1}", "amount_cents": 0 }),
                attempts: 1,
            },
        ),
        // No `name`: `invalid-input`, a permanent fault: failed at once.
        ("transform", json!({ "nom": "Ada" }), Expect::Failed { code: "invalid-input", attempts: 1 }),
        (
            "flaky",
            json!({ "succeed_on_attempt": 1 }),
            Expect::Completed { output: json!({ "attempt": 1 }), attempts: 1 },
        ),
        (
            "flaky",
            json!({ "succeed_on_attempt": 3 }),
            Expect::Completed { output: json!({ "attempt": 3 }), attempts: 3 },
        ),
        (
            "flaky",
            json!({ "succeed_on_attempt": 9 }),
            Expect::Failed { code: "flaky.unavailable", attempts: MAX_ATTEMPTS },
        ),
        // No attempt number, or not a whole one: bad input, the same fault in
        // every language, never retried.
        ("flaky", json!({ "succeed_on_attempt": "3" }), Expect::Failed { code: "invalid-input", attempts: 1 }),
        ("flaky", json!({}), Expect::Failed { code: "invalid-input", attempts: 1 }),
        (
            "business",
            json!({ "account": "acme", "amount": 120, "balance": 100 }),
            Expect::BusinessError("insufficient-funds"),
        ),
        ("business", json!({ "account": "frozen", "amount": 1, "balance": 100 }), Expect::BusinessStatus("frozen")),
        (
            "business",
            json!({ "account": "acme", "amount": 30, "balance": 100 }),
            Expect::Completed { output: json!({ "charged": 30, "balance": 70 }), attempts: 1 },
        ),
        ("runaway", json!({}), Expect::Failed { code: "husk.timeout", attempts: RUNAWAY_ATTEMPTS }),
    ]
}

fn check(language: Language, expect: &Expect, outcome: &Outcome, attempts: u32, history: &str) {
    let context =
        format!("{}: expected {expect:?}, got {outcome:?} after {attempts} attempts ({history})", language.name());
    match (expect, outcome) {
        (Expect::Completed { output: want, attempts: n }, Outcome::Completed { output }) => {
            let got: Value = serde_json::from_slice(output).unwrap_or_else(|e| panic!("{context}: not JSON: {e}"));
            assert_eq!((&got, attempts), (want, *n), "{context}");
        }
        (Expect::BusinessError(code), Outcome::BusinessError { code: got, message }) => {
            assert_eq!((got.as_str(), message.as_str()), (*code, "the payment was declined"), "{context}");
            assert_eq!(attempts, 1, "{context}");
        }
        (Expect::BusinessStatus(value), Outcome::BusinessStatus { value: got }) => {
            assert_eq!((got.as_str(), attempts), (*value, 1), "{context}");
        }
        (Expect::Failed { code, attempts: n }, Outcome::Failed { last_fault, attempts: got, diagnostic, .. }) => {
            assert_eq!((last_fault.code.as_str(), *got), (*code, *n), "{context}");
            // The language's mapper said why (husk adds when the fault is a
            // permanent one).
            let said = format!("technical fault {code}");
            let permanent = format!("{said}; `{code}` is a permanent fault: never retried");
            assert!(diagnostic == &said || diagnostic == &permanent, "{context}");
        }
        _ => panic!("{context}"),
    }
}

/// Runs the table through a host whose four topics run `language`'s
/// guests, each classified by `language`'s mapper.
fn conformance(language: Language) {
    let Some(mapper) = language.guest("mapper") else { return };
    let source = |name: &str| PluginSource::Path(language.guest(name).expect("built with the mapper"));
    let retry = RetryPolicySpec::Fixed { max_attempts: MAX_ATTEMPTS, delay: Duration::from_millis(5) };
    let topic = |name: &str| {
        Topic::wasm(name, source(name))
            .with_workers(1)
            .with_mapper(MapperSpec::Plugin(PluginSource::Path(mapper.clone())))
            .with_mapper_deadline(MAPPER_DEADLINE)
    };
    let sink = Arc::new(WaitingSink::default());
    let host = Host::builder()
        .engine(cached_config())
        .sink(sink.clone())
        .default_retry(retry)
        .topic(topic("transform"))
        .topic(topic("flaky"))
        .topic(topic("business"))
        .topic(
            topic("runaway")
                .with_limits(Limits::default().with_deadline(Duration::from_millis(200)))
                .with_retry(RetryPolicySpec::Fixed { max_attempts: RUNAWAY_ATTEMPTS, delay: Duration::from_millis(5) }),
        )
        .build()
        .unwrap_or_else(|e| panic!("{}: {e}", language.name()));
    let table = table();
    let mut expected = HashMap::new();
    for (i, (operation, input, _)) in table.iter().enumerate() {
        expected.insert(host.enqueue(operation, input.to_string()).unwrap(), i);
    }
    let outcomes = sink.wait_for(table.len(), PATIENCE);
    host.shutdown();
    assert_eq!(outcomes.len(), table.len(), "{}: one outcome per job", language.name());
    for outcome in &outcomes {
        let (operation, _, expect) = &table[expected[&outcome.job_id]];
        assert_eq!(&outcome.topic, operation);
        let record = host.job(outcome.job_id).unwrap().unwrap();
        let history: Vec<_> = record.attempts.iter().map(|a| a.fault.as_ref().map(|f| f.code.clone())).collect();
        check(language, expect, &outcome.outcome, outcome.attempts, &format!("faults by attempt: {history:?}"));
    }
}

#[test]
fn rust_guests_meet_the_conformance_table() {
    conformance(Language::Rust);
}

#[test]
#[cfg_attr(not(husk_guests_python), ignore = "no python guest toolchain: run scripts/build-guests python")]
fn python_guests_meet_the_conformance_table() {
    conformance(Language::Python);
}

#[test]
#[cfg_attr(not(husk_guests_js), ignore = "no js guest toolchain: run scripts/build-guests js")]
fn js_guests_meet_the_conformance_table() {
    conformance(Language::Js);
}

#[test]
#[cfg_attr(not(husk_guests_c), ignore = "no c guest toolchain: run scripts/build-guests c")]
fn c_guests_meet_the_conformance_table() {
    conformance(Language::C);
}

#[test]
#[cfg_attr(not(husk_guests_go), ignore = "no go guest toolchain: run scripts/build-guests go")]
fn go_guests_meet_the_conformance_table() {
    conformance(Language::Go);
}

/// Faults and the classification every language's mapper must give them.
fn mapper_table() -> Vec<(Fault, Classification)> {
    let declined = |code: &str| {
        Classification::BusinessError(BusinessError { code: code.into(), message: "the payment was declined".into() })
    };
    vec![
        (Fault::json("payment.declined", &json!({ "reason": "insufficient-funds" })), declined("insufficient-funds")),
        (Fault::json("payment.declined", &json!({ "amount": 3 })), declined("declined")),
        (Fault::new("payment.declined", "not json"), declined("declined")),
        (
            Fault::json("account.frozen", &json!({ "status": "frozen" })),
            Classification::BusinessStatus("frozen".into()),
        ),
        (
            Fault::json("anything", &json!({ "status": "on-hold", "n": [1, {"status": "x"}] })),
            Classification::BusinessStatus("on-hold".into()),
        ),
        (
            Fault::json("anything", &json!({ "status": 7 })),
            Classification::Technical("technical fault anything".into()),
        ),
        (
            Fault::new("validation.missing-field", ""),
            Classification::TechnicalNonRetryable("invalid request: validation.missing-field".into()),
        ),
        (
            Fault::json("husk.timeout", &json!({ "deadline_ms": 10 })),
            Classification::Technical("technical fault husk.timeout".into()),
        ),
        (Fault::new("http.503", "Service Unavailable"), Classification::Technical("technical fault http.503".into())),
        (Fault::new("flaky.unavailable", ""), Classification::Technical("technical fault flaky.unavailable".into())),
    ]
}

#[test]
fn every_language_mapper_classifies_the_same_faults_the_same_way() {
    let sandbox = Sandbox::new(Engine::new(cached_config()).unwrap()).unwrap();
    let limits = mapper_limits();
    let mut checked = Vec::new();
    for language in Language::ALL.into_iter().filter(|l| l.installed()) {
        let path = language.guest("mapper").expect("an installed language's guests");
        let mapper = sandbox.load(&path, World::ErrorMapper).unwrap();
        for (fault, want) in mapper_table() {
            let classified = sandbox.classify(&mapper, &fault, &limits).unwrap();
            match classified.ending {
                Ending::Returned(got) => assert_eq!(got, want, "{} classifying {fault:?}", language.name()),
                other => panic!("{} mapper did not return on {fault:?}: {other:?}", language.name()),
            }
        }
        checked.push(language.name());
    }
    assert!(checked.contains(&"rust"), "the Rust mapper is always checked");
}

#[test]
fn every_language_logs_through_the_log_import() {
    let sandbox = Sandbox::new(Engine::new(cached_config()).unwrap()).unwrap();
    for language in Language::ALL.into_iter().filter(|l| l.installed()) {
        let path = language.guest("flaky").expect("an installed language's guests");
        let flaky = sandbox.load(&path, World::Operation).unwrap();
        let input = json!({ "succeed_on_attempt": 2 });
        let logs = GuestLogs::default();
        let failed =
            logs.capture(|| sandbox.execute(&flaky, &job(1, input.clone()), &Limits::default(), None).unwrap());
        assert!(failed.log.bytes_written > 0, "{}: flaky logs a warning on a failed attempt", language.name());
        let messages = logs.messages();
        assert!(
            messages.iter().any(|m| m.contains("attempt 1 of job job-1: dependency unavailable")),
            "{}: the warning arrives through husk:worker/log: {messages:?}",
            language.name()
        );
        let succeeded = sandbox.execute(&flaky, &job(2, input), &Limits::default(), None).unwrap();
        assert_eq!(succeeded.log.bytes_written, 0, "{}: and nothing when it succeeds", language.name());
    }
}

/// `fetch` and `config` in every language that has them (C has no
/// `fetch`: see examples/c/build; Go has neither yet, see
/// examples/go/README.md): through a host with retries, `fetch`
/// against a server on 127.0.0.1 that fails each key's first call — the
/// job completes on attempt 2, both calls with the same idempotency key —
/// and is denied a host its topic does not allow; `config` reads its own
/// topic's value and none for a missing key.
#[test]
fn every_language_calls_only_allowed_hosts_with_stable_keys_and_reads_its_config() {
    use husk::capability::{AllowedHost, ConfigGrant, Grants, HttpGrant};

    let server = crate::support_http::TestServer::start();
    let http = Grants::default()
        .with_http(HttpGrant::default().with_allowed(vec![AllowedHost::parse(&server.origin()).unwrap()]));
    let values = [("region".to_owned(), "eu-west-1".to_owned())].into_iter().collect();
    let config = Grants::default().with_config(ConfigGrant::new(values, Default::default()).unwrap());
    let languages: Vec<Language> = Language::ALL.into_iter().filter(|l| l.installed() && *l != Language::Go).collect();
    let sink = Arc::new(WaitingSink::default());
    let mut builder = Host::builder()
        .engine(cached_config())
        .sink(sink.clone())
        .default_retry(RetryPolicySpec::Fixed { max_attempts: 3, delay: Duration::from_millis(5) });
    for language in &languages {
        let source = |name| PluginSource::Path(language.guest(name).unwrap());
        let config_topic = Topic::wasm(format!("{}-config", language.name()), source("config"));
        builder = builder.topic(config_topic.with_workers(1).with_grants(config.clone()));
        if *language != Language::C {
            let fetch_topic = Topic::wasm(format!("{}-fetch", language.name()), source("fetch"));
            builder = builder.topic(fetch_topic.with_workers(1).with_grants(http.clone()));
        }
    }
    let host = builder.build().unwrap();
    let mut expected = HashMap::new();
    for language in &languages {
        let name = language.name();
        for (key, value) in [("region", json!("eu-west-1")), ("missing", Value::Null)] {
            let id = host.enqueue(&format!("{name}-config"), json!({ "key": key }).to_string()).unwrap();
            expected.insert(
                id,
                (*language, Expect::Completed { output: json!({ "key": key, "value": value }), attempts: 1 }),
            );
        }
        if *language == Language::C {
            continue;
        }
        let path = format!("/fail-until/2?{name}");
        let id = host.enqueue(&format!("{name}-fetch"), json!({ "url": server.url(&path) }).to_string()).unwrap();
        let key = format!("husk-{id}-1");
        let output = json!({ "status": 200, "body": key, "requests": 1 });
        expected.insert(id, (*language, Expect::Completed { output, attempts: 2 }));
        // A host the topic does not allow: denied, a permanent fault, never
        // retried. (JavaScript's fetch reports a network error, which is
        // retried: every attempt denied.)
        let denied = json!({ "url": format!("http://127.0.0.2:{}/ok", server.port()) });
        let (code, attempts) =
            if *language == Language::Js { ("http.network-error", 3) } else { ("http.http-request-denied", 1) };
        let id = host.enqueue(&format!("{name}-fetch"), denied.to_string()).unwrap();
        expected.insert(id, (*language, Expect::Failed { code, attempts }));
    }
    for outcome in sink.wait_for(expected.len(), PATIENCE) {
        let (language, expect) = &expected[&outcome.job_id];
        match (expect, &outcome.outcome) {
            // No mapper here: the diagnostic is husk's, not a mapper's.
            (Expect::Failed { code, attempts }, Outcome::Failed { last_fault, .. }) => {
                let got = (last_fault.code.as_str(), outcome.attempts);
                assert_eq!(got, (*code, *attempts), "{}: {outcome:?}", language.name());
            }
            _ => check(*language, expect, &outcome.outcome, outcome.attempts, &format!("{outcome:?}")),
        }
    }
    host.shutdown();
    for language in languages.iter().filter(|l| **l != Language::C) {
        let path = format!("/fail-until/2?{}", language.name());
        let keys: Vec<_> = server.seen().into_iter().filter(|s| s.path == path).map(|s| s.key).collect();
        assert_eq!(keys.len(), 2, "{}: {keys:?}", language.name());
        assert!(keys[0].is_some() && keys[0] == keys[1], "{}: {keys:?}", language.name());
    }
    assert!(server.seen().iter().all(|s| s.path != "/ok"), "no denied request reached a server");
}
