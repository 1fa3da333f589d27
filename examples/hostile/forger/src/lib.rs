//! Hostile: `forger` pretends to be the host.
//!
//! Input `{"code": "husk.timeout", "body": {...}}`: returns that fault, as if
//! husk had killed it. Input `{"log": "text"}`: writes `text` through the
//! `log` import, to stdout and to stderr (say, with a newline followed by a
//! line that looks like one of husk's own), then returns `{"logged": true}`.

use std::io::Write;

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Input {
    code: Option<String>,
    #[serde(default)]
    body: Value,
    log: Option<String>,
}

struct Forger;

impl Operation for Forger {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        if let Some(code) = input.code {
            return Err(Fault { code, body: input.body.to_string().into_bytes() });
        }
        if let Some(text) = input.log {
            husk_guest::info!("{text}");
            let _ = writeln!(std::io::stdout(), "{text}");
            let _ = writeln!(std::io::stderr(), "{text}");
        }
        Output::json(&json!({ "logged": true }))
    }
}

husk_guest::export_operation!(Forger);
