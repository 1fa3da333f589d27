//! Hostile: `snoop` tries to read host files, list directories, read
//! environment variables and arguments, and reports what it saw. In husk's
//! sandbox every attempt must fail or come back empty.
//!
//! Input `{"path": "/etc/hostname", "env": "HOME"}`; output
//! `{"file": ..., "dir": ..., "env": ..., "env_count": N, "args_count": N}`
//! where `file`, `dir` and `env` are `{"ok": ...}` or `{"err": ...}`.

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Input {
    path: String,
    env: String,
}

fn report<T: Into<Value>, E: ToString>(result: Result<T, E>) -> Value {
    match result {
        Ok(value) => json!({ "ok": value.into() }),
        Err(e) => json!({ "err": e.to_string() }),
    }
}

struct Snoop;

impl Operation for Snoop {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        let file = report(std::fs::read_to_string(&input.path));
        let dir = report(std::fs::read_dir("/").map(|entries| entries.count()));
        let env = report(std::env::var(&input.env));
        Output::json(&json!({
            "file": file,
            "dir": dir,
            "env": env,
            "env_count": std::env::vars().count(),
            "args_count": std::env::args().count(),
        }))
    }
}

husk_guest::export_operation!(Snoop);
