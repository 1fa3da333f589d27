//! Hostile: `memory-bomb` allocates and touches 1 MiB blocks without bound.
//! The host's memory cap must stop it (`husk.memory-limit`).

use husk_guest::{Fault, Job, Operation, Output};

struct MemoryBomb;

impl Operation for MemoryBomb {
    fn execute(_job: Job) -> Result<Output, Fault> {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(vec![0xA5; 1 << 20]);
            std::hint::black_box(&hoard);
        }
    }
}

husk_guest::export_operation!(MemoryBomb);
