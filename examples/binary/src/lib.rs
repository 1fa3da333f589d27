//! `binary` — returns exactly the bytes its input names, for tests of
//! byte-exact outputs and fault bodies (a WIT `list<u8>` need not be JSON or
//! UTF-8).
//!
//! Input `{"output": [255, 0, 104]}` returns those bytes as output;
//! `{"fault": [255, 0]}` fails with code `binary.fault` and those bytes as
//! body; `{"text": "…"}` returns the text's UTF-8 bytes as they are (JSON
//! with its own whitespace, say).

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "lowercase")]
enum Input {
    Output(Vec<u8>),
    Fault(Vec<u8>),
    Text(String),
}

struct Binary;

impl Operation for Binary {
    fn execute(job: Job) -> Result<Output, Fault> {
        match job.input_json()? {
            Input::Output(bytes) => Ok(Output::bytes(bytes)),
            Input::Fault(body) => Err(Fault { code: "binary.fault".into(), body }),
            Input::Text(text) => Ok(Output::bytes(text.into_bytes())),
        }
    }
}

husk_guest::export_operation!(Binary);
