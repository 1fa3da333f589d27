//! Hostile: `big-output` returns more output than the host accepts
//! (`husk.output-too-large`). Input `{"bytes": N}` sets the size (default
//! 4 MiB).

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;

#[derive(Deserialize)]
struct Input {
    #[serde(default = "four_mib")]
    bytes: usize,
}

fn four_mib() -> usize {
    4 << 20
}

struct BigOutput;

impl Operation for BigOutput {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        Ok(Output::bytes(vec![b'x'; input.bytes]))
    }
}

husk_guest::export_operation!(BigOutput);
