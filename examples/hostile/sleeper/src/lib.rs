//! Hostile: `sleeper` blocks inside a WASI host call instead of in
//! WebAssembly code, where an epoch deadline alone cannot reach it.
//!
//! Input `{"sleep_ms": N}`: `std::thread::sleep` for N ms (on wasip2, a
//! `wasi:clocks/monotonic-clock` pollable and `wasi:io/poll`).
//! Input `{"never": true}`: polls a pollable that never becomes ready (an
//! instant at the end of time). Logs `sleeping` first, so a test knows the
//! guest is in its host call. Output `{"slept_ms": N}` if it ever returns.

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Input {
    #[serde(default)]
    sleep_ms: u64,
    #[serde(default)]
    never: bool,
}

struct Sleeper;

impl Operation for Sleeper {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        husk_guest::info!("sleeping");
        if input.never {
            let pollable = wasip2::clocks::monotonic_clock::subscribe_instant(u64::MAX);
            wasip2::io::poll::poll(&[&pollable]);
        } else {
            std::thread::sleep(std::time::Duration::from_millis(input.sleep_ms));
        }
        Output::json(&json!({ "slept_ms": input.sleep_ms }))
    }
}

husk_guest::export_operation!(Sleeper);
