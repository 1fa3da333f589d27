//! Hostile: `log-flood` writes far more log than the host's per-job cap,
//! through the `log` import, stdout and stderr, then succeeds. The job must
//! complete, and at most the cap may reach the host's log. Input
//! `{"lines": N}` (default 100,000 lines of each kind).

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Input {
    #[serde(default = "many")]
    lines: u32,
}

fn many() -> u32 {
    100_000
}

struct LogFlood;

impl Operation for LogFlood {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        for i in 0..input.lines {
            husk_guest::info!("flood line {i}: the quick brown fox jumps over the lazy dog");
            println!("stdout line {i}: the quick brown fox jumps over the lazy dog");
            eprintln!("stderr line {i}: the quick brown fox jumps over the lazy dog");
        }
        Output::json(&json!({ "lines": input.lines }))
    }
}

husk_guest::export_operation!(LogFlood);
