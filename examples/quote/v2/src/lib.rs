//! `quote-v2` — version 2 of `quote` (see `examples/quote/quote.rs`): the
//! fixed version, which also prices USD and GBP.

use husk_guest::{Fault, Job, Operation, Output};

#[path = "../../quote.rs"]
mod quote;

struct Quote;

impl Operation for Quote {
    fn execute(job: Job) -> Result<Output, Fault> {
        quote::quote(&job, "v2")
    }
}

husk_guest::export_operation!(Quote);
