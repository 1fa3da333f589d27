//! Hostile: `residue` looks for what an earlier job left in its memory.
//! Input `{"mode": "write"}` fills a 1 MiB static buffer (zero in the
//! module's image, past the pool's kept-resident 128 KiB) and 2 MiB of
//! freshly grown memory with a marker; `{"mode": "read"}` counts the
//! non-zero bytes of the same buffer and of 2 MiB grown the same way. A host
//! that resets an instance's memory between jobs answers every read with
//! zeros, whichever slot of the pool the job lands in.

use husk_guest::{Fault, Job, Operation, Output};
use serde::Deserialize;

const STATIC_BYTES: usize = 1 << 20;
const GROWN_PAGES: usize = 32;
const PAGE: usize = 64 << 10;
const MARKER: u8 = 0xA5;

static mut BUFFER: [u8; STATIC_BYTES] = [0; STATIC_BYTES];

#[derive(Deserialize)]
struct Input {
    mode: String,
}

/// The static buffer and the grown region, written (`write`) or counted.
fn visit(write: bool) -> (usize, usize) {
    // SAFETY: the guest runs one job on one thread; nothing else holds the
    // buffer. The grown pages are this call's own: `memory.grow` gave them
    // and no allocator knows of them.
    unsafe {
        let buffer = &mut *std::ptr::addr_of_mut!(BUFFER);
        let first = core::arch::wasm32::memory_grow(0, GROWN_PAGES);
        assert!(first != usize::MAX, "memory.grow refused {GROWN_PAGES} pages");
        let grown = std::slice::from_raw_parts_mut((first * PAGE) as *mut u8, GROWN_PAGES * PAGE);
        if write {
            buffer.fill(MARKER);
            grown.fill(MARKER);
        }
        let count = |bytes: &[u8]| bytes.iter().filter(|b| **b != 0).count();
        (count(buffer), count(grown))
    }
}

struct Residue;

impl Operation for Residue {
    fn execute(job: Job) -> Result<Output, Fault> {
        let input: Input = job.input_json()?;
        let (static_bytes, grown_bytes) = match input.mode.as_str() {
            "write" => visit(true),
            "read" => visit(false),
            other => return Err(Fault::new("residue.bad-mode", other)),
        };
        Output::json(&serde_json::json!({ "nonzero_static": static_bytes, "nonzero_grown": grown_bytes }))
    }
}

husk_guest::export_operation!(Residue);
