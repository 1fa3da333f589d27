//! Property: over random sequences of worker outcomes, cancels and clock
//! advances, every job reaches exactly one terminal outcome and never runs
//! more attempts than its policy allows.

use std::collections::HashMap;
use std::time::Duration;

use husk::fault::Fault;
use husk::outcome::Outcome;
use husk::retry::RetryPolicySpec;
use husk::sandbox::Ending;
use husk::store::{JobId, LockedJob};
use proptest::prelude::*;

use husk::conformance::Backend;

use crate::rig::{LOCK, Rig};

#[derive(Debug, Clone)]
enum Step {
    Fetch(usize),
    Report { held: usize, result: u8 },
    Advance(u64),
    Cancel(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (1usize..4).prop_map(Step::Fetch),
        4 => (0usize..8, 0u8..4).prop_map(|(held, result)| Step::Report { held, result }),
        2 => (0u64..45).prop_map(Step::Advance),
        1 => (0usize..8).prop_map(Step::Cancel),
    ]
}

fn result(kind: u8) -> Ending {
    match kind {
        0 => Ending::Returned(b"1".to_vec()),
        1 => Ending::Fault(Fault::new("business", "")),
        2 => Ending::Cancelled,
        _ => Ending::Fault(Fault::new("technical", "")),
    }
}

/// The property, on one backend.
fn check(
    backend: &dyn Backend,
    jobs: usize,
    max_attempts: u32,
    delay: u64,
    steps: Vec<Step>,
) -> Result<(), TestCaseError> {
    let rig = Rig::on(backend, None);
    let mapper = crate::rig::rules(serde_json::json!([{ "code": "business", "classify_as": "business-error" }]));
    let retry = RetryPolicySpec::Fixed { max_attempts, delay: Duration::from_secs(delay) };
    rig.dispatcher
        .set_topic("t", husk::dispatch::TopicPolicy { retry: Some(retry), mapper: Some(mapper), ..Default::default() });
    let ids: Vec<JobId> = (0..jobs).map(|_| rig.enqueue("t")).collect();
    let mut held: Vec<LockedJob> = Vec::new();
    let mut attempts_seen: HashMap<JobId, u32> = HashMap::new();
    let mut record = |job: &LockedJob| {
        let seen = attempts_seen.entry(job.id()).or_default();
        *seen = (*seen).max(job.attempt);
    };
    for step in steps {
        match step {
            Step::Fetch(max) => {
                for job in rig.fetch("t", max) {
                    record(&job);
                    held.push(job);
                }
            }
            Step::Report { held: i, result: kind } if !held.is_empty() => {
                let job = held.remove(i % held.len());
                rig.dispatcher.report(&job, result(kind), None).unwrap();
            }
            Step::Report { .. } => {}
            Step::Advance(secs) => rig.clock.advance(Duration::from_secs(secs)),
            Step::Cancel(i) => {
                rig.dispatcher.cancel(ids[i % ids.len()]).unwrap();
            }
        }
    }
    // Drain: workers that always succeed, and locks left to expire.
    for _ in 0..(4 * max_attempts as usize + 4) {
        rig.clock.advance(LOCK + Duration::from_secs(delay));
        for job in rig.fetch("t", 100) {
            record(&job);
            rig.dispatcher.report(&job, Ending::Returned(b"1".to_vec()), None).unwrap();
        }
    }
    let outcomes = rig.sink.outcomes();
    prop_assert_eq!(outcomes.len(), jobs, "one outcome per job: {:?}", outcomes);
    for id in &ids {
        let mine: Vec<_> = outcomes.iter().filter(|o| o.job_id == *id).collect();
        prop_assert_eq!(mine.len(), 1);
        prop_assert!(mine[0].attempts <= max_attempts, "{:?}", mine[0]);
        if let Outcome::Failed { attempts, .. } = &mine[0].outcome {
            prop_assert!(*attempts <= max_attempts);
        }
    }
    for (id, attempt) in attempts_seen {
        prop_assert!(attempt <= max_attempts, "job {} ran attempt {}", id, attempt);
    }
    Ok(())
}

/// One property test per backend; stores that open a file or a schema per
/// case run fewer cases of the same property.
macro_rules! property_per_backend {
    ($($(#[$meta:meta])* $name:ident: $backend:expr, $cases:expr;)*) => {$(
        proptest! {
            #![proptest_config(ProptestConfig { cases: $cases, ..ProptestConfig::default() })]

            #[test]
            $(#[$meta])*
            fn $name(
                jobs in 1usize..8,
                max_attempts in 1u32..4,
                delay in 0u64..10,
                steps in proptest::collection::vec(step(), 0..60),
            ) {
                if let Some(backend) = $backend {
                    check(&backend, jobs, max_attempts, delay, steps)?;
                }
            }
        }
    )*};
}

property_per_backend! {
    every_job_ends_exactly_once_within_its_attempts_memory: Some(crate::rig::memory), 200;
    every_job_ends_exactly_once_within_its_attempts_sqlite: Some(crate::rig::sqlite), 40;
    #[cfg_attr(not(husk_postgres), ignore = "no PostgreSQL test server: run scripts/postgres start")]
    every_job_ends_exactly_once_within_its_attempts_postgres: crate::rig::pg::url().map(|_| crate::rig::postgres), 25;
}
