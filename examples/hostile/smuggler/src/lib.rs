//! Hostile: `smuggler` tries to get a secret or a crash out of what it
//! returns.
//!
//! Input `{"secret": "<config key>", "form": "<form>"}` reads the topic's
//! secret and shows it as `form` says:
//!
//! - `reserved-fault`: a fault with the host's code `husk.leak` whose body
//!   is not JSON (`leaked: <secret>`), so the host wraps and encodes it;
//! - `json-output`, `json-fault`, `json-log`: inside a JSON string (JSON
//!   escapes `"`, `\` and newlines), as the output, a fault's body or a line
//!   of the `log` import;
//! - `stdout`: printed on stdout between two lines (a multi-line secret
//!   spans several lines);
//! - `straddle`: on stdout with padding so that it straddles the host's
//!   4,096-byte cut of a long line;
//! - `drip`: on stderr one byte per write, then a panic (the stderr tail is
//!   the trap's body).
//!
//! Input `{"depth": N, "as": "output" | "fault" | "reserved-fault"}`
//! returns JSON arrays nested `N` deep (`[[…]]`).

use std::io::Write;

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Input {
    secret: Option<String>,
    #[serde(default)]
    form: String,
    depth: Option<usize>,
    #[serde(default, rename = "as")]
    shape: String,
}

/// The host's cut of a stdout line without a newline.
const LINE_CUT: usize = 4096;

struct Smuggler;

impl Operation for Smuggler {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        if let Some(depth) = input.depth {
            return deep(depth, &input.shape);
        }
        let key = input.secret.ok_or_else(|| Fault::bare("smuggler.no-secret"))?;
        let value = husk_guest::config::get(&key)
            .map_err(|e| Fault::new("smuggler.config", &json!({ "error": e.to_string() })))?
            .ok_or_else(|| Fault::bare("smuggler.no-such-key"))?;
        let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
        match input.form.as_str() {
            "reserved-fault" => {
                return Err(Fault { code: "husk.leak".into(), body: format!("leaked: {value}").into_bytes() });
            }
            "json-output" => return Output::json(&json!({ "leaked": value })),
            "json-fault" => return Err(Fault::new("smuggler.leak", &json!({ "leaked": value }))),
            "json-log" => husk_guest::info!("{}", json!({ "leaked": value })),
            "stdout" => {
                let _ = write!(out, "before\n{value}\nafter\n");
            }
            "straddle" => {
                // One write without a newline, which the host cuts.
                let padding = "x".repeat(LINE_CUT - value.len() / 2);
                let _ = write!(out, "{padding}{value}");
                let _ = out.flush();
                let _ = writeln!(out);
            }
            "drip" => {
                for byte in value.as_bytes() {
                    let _ = err.write_all(&[*byte]);
                    let _ = err.flush();
                }
                panic!("dripped");
            }
            other => return Err(Fault::new("smuggler.form", &json!({ "unknown": other }))),
        }
        let _ = (out.flush(), err.flush());
        Output::json(&json!({ "shown": input.form }))
    }
}

/// JSON arrays nested `depth` deep, as the output or a fault's body.
fn deep(depth: usize, shape: &str) -> Result<Output, Fault> {
    let mut text = "[".repeat(depth);
    text.push_str(&"]".repeat(depth));
    let body = text.into_bytes();
    match shape {
        "fault" => Err(Fault { code: "smuggler.deep".into(), body }),
        "reserved-fault" => Err(Fault { code: "husk.deep".into(), body }),
        _ => Ok(Output::bytes(body)),
    }
}

husk_guest::export_operation!(Smuggler);
