//! `config` — returns the config value its input names.
//!
//! Input `{"key": "endpoint"}`; output `{"key": "endpoint", "value": "…"}`,
//! `"value": null` when the topic has no such key. With `"log": true` it
//! also logs the value (husk replaces a secret's value with `***` in its
//! log), and with `"fault": true` it returns it in a fault's body instead
//! (replaced the same way).

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Input {
    key: String,
    #[serde(default)]
    log: bool,
    #[serde(default)]
    fault: bool,
}

struct Config;

impl Operation for Config {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        let value = husk_guest::config::get(&input.key)
            .map_err(|e| Fault::new("config.unavailable", &json!({ "error": e.to_string() })))?;
        if input.log {
            husk_guest::info!("config {} = {}", input.key, value.as_deref().unwrap_or("(none)"));
        }
        if input.fault {
            return Err(Fault::new("config.shown", &json!({ "key": input.key, "value": value })));
        }
        Output::json(&json!({ "key": input.key, "value": value }))
    }
}

husk_guest::export_operation!(Config);
