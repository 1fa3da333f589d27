//! `transform` — the smallest useful operation: a pure JSON transform.
//!
//! Input `{"name": "Ada", "amount": 12.5}`, output
//! `{"greeting": "hello, Ada", "amount_cents": 1250}`. It is the workload of
//! husk's benchmarks. Run it with:
//!
//! ```text
//! husk run target/guests/wasm32-wasip2/release/transform.wasm --input '{"name":"Ada","amount":12.5}'
//! ```

use husk_guest::{Fault, Job, Operation, Output};
use serde::{Deserialize, Serialize};

#[derive(Deserialize)]
struct Input {
    name: String,
    #[serde(default)]
    amount: f64,
}

#[derive(Serialize)]
struct Greeting {
    greeting: String,
    amount_cents: i64,
}

struct Transform;

impl Operation for Transform {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        Output::json(&Greeting {
            greeting: format!("hello, {}", input.name),
            amount_cents: (input.amount * 100.0).round() as i64,
        })
    }
}

husk_guest::export_operation!(Transform);
