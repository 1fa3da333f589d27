//! `flaky` — a technical fault until a given attempt, then success.
//!
//! Input `{"succeed_on_attempt": 3}`: attempts 1 and 2 return the fault
//! `flaky.unavailable` (a stand-in for a dependency that is briefly down),
//! attempt 3 and later return `{"attempt": N}`. Shows retries driven by
//! `job.attempt`.

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Input {
    succeed_on_attempt: u32,
}

struct Flaky;

impl Operation for Flaky {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        if job.attempt < input.succeed_on_attempt {
            husk_guest::warn!("attempt {} of job {}: dependency unavailable", job.attempt, job.id);
            return Err(Fault::new(
                "flaky.unavailable",
                &json!({ "attempt": job.attempt, "succeed_on_attempt": input.succeed_on_attempt }),
            ));
        }
        Output::json(&json!({ "attempt": job.attempt }))
    }
}

husk_guest::export_operation!(Flaky);
