//! `{{name}}`: a husk operation. Input `{"name": "Ada"}`, output
//! `{"greeting": "hello, Ada"}`; input without a `name` is the fault
//! `invalid-input`.

// Generates `Guest`, `Job`, `Fault`, the `log` import and `export!`.
wit_bindgen::generate!({ path: "wit", world: "operation" });

use husk::worker::log::{Level, log};
use serde_json::{Value, json};

struct Operation;

impl Guest for Operation {
    fn execute(job: Job) -> Result<Vec<u8>, Fault> {
        let input: Value = serde_json::from_slice(&job.input).unwrap_or(Value::Null);
        let Some(name) = input["name"].as_str() else {
            let body = json!({ "error": "missing field `name`" });
            return Err(Fault { code: "invalid-input".into(), body: body.to_string().into_bytes() });
        };
        log(Level::Info, &format!("job {} (attempt {}): greeting {name}", job.id, job.attempt));
        Ok(json!({ "greeting": format!("hello, {name}") }).to_string().into_bytes())
    }
}

export!(Operation);
