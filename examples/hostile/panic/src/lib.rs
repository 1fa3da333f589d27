//! Hostile: `panic` panics with a message. The host reports `husk.trap`
//! with the panic message the guest wrote to stderr.

use husk_guest::{Fault, Job, Operation, Output};

struct Panic;

impl Operation for Panic {
    fn execute(job: Job) -> Result<Output, Fault> {
        panic!("guest gave up on job {}", job.id);
    }
}

husk_guest::export_operation!(Panic);
