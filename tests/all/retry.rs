//! Retry policy batteries and their serde form.

use std::time::Duration;

use husk::retry::{DEFAULT_RETRY, ExponentialBackoff, FixedDelay, NoRetry, RetryPolicy, RetryPolicySpec};

#[test]
fn no_retry_never_retries() {
    assert_eq!(NoRetry.retry(1, "x"), None);
    assert_eq!(RetryPolicySpec::None.retry(1, "x"), None);
}

#[test]
fn fixed_delay_retries_until_max_attempts() {
    let policy = FixedDelay { max_attempts: 3, delay: Duration::from_secs(5) };
    assert_eq!(policy.retry(1, "x"), Some(Duration::from_secs(5)));
    assert_eq!(policy.retry(2, "x"), Some(Duration::from_secs(5)));
    assert_eq!(policy.retry(3, "x"), None);
}

#[test]
fn exponential_backoff_doubles_up_to_its_cap() {
    let policy = ExponentialBackoff {
        max_attempts: 10,
        base: Duration::from_secs(1),
        max: Duration::from_secs(10),
        jitter: false,
    };
    let backoffs: Vec<_> = (1..10).map(|a| policy.retry(a, "x").unwrap().as_secs()).collect();
    assert_eq!(backoffs, vec![1, 2, 4, 8, 10, 10, 10, 10, 10]);
    assert_eq!(policy.retry(10, "x"), None);
    assert_eq!(policy.ceiling(200), Duration::from_secs(10), "no overflow on huge attempts");
}

#[test]
fn exponential_jitter_stays_within_half_and_all_of_the_backoff() {
    let policy = ExponentialBackoff {
        max_attempts: 5,
        base: Duration::from_millis(100),
        max: Duration::from_secs(1),
        jitter: true,
    };
    let mut distinct = std::collections::HashSet::new();
    for attempt in 1..5 {
        let ceiling = policy.ceiling(attempt);
        for _ in 0..500 {
            let backoff = policy.retry(attempt, "x").unwrap();
            assert!(
                backoff >= ceiling / 2 && backoff <= ceiling,
                "{backoff:?} outside [{:?}, {ceiling:?}]",
                ceiling / 2
            );
            distinct.insert(backoff);
        }
    }
    assert!(distinct.len() > 100, "jitter varies the backoff");
}

#[test]
fn default_is_three_attempts_exponential_with_jitter() {
    let spec = RetryPolicySpec::default();
    assert_eq!(
        spec,
        RetryPolicySpec::Exponential {
            max_attempts: DEFAULT_RETRY.max_attempts,
            base: DEFAULT_RETRY.base,
            max: DEFAULT_RETRY.max,
            jitter: DEFAULT_RETRY.jitter
        }
    );
    assert!(matches!(spec, RetryPolicySpec::Exponential { max_attempts: 3, jitter: true, .. }));
    assert!(spec.retry(1, "x").is_some());
    assert!(spec.retry(2, "x").is_some());
    assert_eq!(spec.retry(3, "x"), None);
}

#[test]
fn policies_are_serde_data_with_human_durations() {
    let spec: RetryPolicySpec =
        serde_json::from_str(r#"{"kind":"exponential","max_attempts":5,"base":"250ms","max":"1m"}"#).unwrap();
    assert_eq!(
        spec,
        RetryPolicySpec::Exponential {
            max_attempts: 5,
            base: Duration::from_millis(250),
            max: Duration::from_secs(60),
            jitter: true
        }
    );
    let round_trip: RetryPolicySpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
    assert_eq!(round_trip, spec);
    assert!(
        serde_json::from_str::<RetryPolicySpec>(r#"{"kind":"fixed","max_attempts":2,"delay":"1s","x":1}"#).is_err()
    );
}
