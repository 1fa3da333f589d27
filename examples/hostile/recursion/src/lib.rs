//! Hostile: `recursion` recurses without bound on the WebAssembly stack.
//! The host's stack limit must stop it (`husk.stack-overflow`).
//!
//! The recursion keeps its state in WebAssembly locals (no shadow stack in
//! linear memory), and its result is not a simple accumulator, so the
//! compiler cannot turn it into a loop.

use husk_guest::{Fault, Job, Operation, Output};

#[inline(never)]
fn depth(n: u64, limit: u64) -> u64 {
    if n == limit {
        return n;
    }
    depth(n + 1, limit).rotate_left(1) ^ n
}

struct Recursion;

impl Operation for Recursion {
    fn execute(job: Job) -> Result<Output, Fault> {
        // Unbounded unless the input says otherwise (it never does in tests).
        let limit = job.input.len() as u64 + u64::MAX / 2;
        Output::json(&depth(0, limit))
    }
}

husk_guest::export_operation!(Recursion);
