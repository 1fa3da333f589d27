//! `quote-v1` — version 1 of `quote` (see `examples/quote/quote.rs`): only
//! EUR; other currencies fail technically on every attempt.

use husk_guest::{Fault, Job, Operation, Output};

#[path = "../../quote.rs"]
mod quote;

struct Quote;

impl Operation for Quote {
    fn execute(job: Job) -> Result<Output, Fault> {
        quote::quote(&job, "v1")
    }
}

husk_guest::export_operation!(Quote);
