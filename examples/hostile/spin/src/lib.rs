//! Hostile: `spin` loops forever. The host's epoch deadline must kill it
//! (`husk.timeout`) and free the worker thread for the next job.

use husk_guest::{Fault, Job, Operation, Output};

struct Spin;

impl Operation for Spin {
    fn execute(job: Job) -> Result<Output, Fault> {
        husk_guest::info!("job {} spinning", job.id);
        let mut n: u64 = 0;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }
}

husk_guest::export_operation!(Spin);
