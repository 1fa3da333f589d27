//! No per-job leak: 4,000 sequential jobs leave the process's heap in use
//! and its memory mappings where they were after a warm-up of 1,000 (which
//! fills caches and the pool's first slot).
//!
//! What is measured is what a leak grows: bytes the allocator has handed out
//! and not had back (glibc's `mallinfo2`, exact), and the number of mappings
//! (`/proc/self/maps`: a store, instance or stack left behind holds one).
//! Resident memory is not: it moves by a megabyte as the allocator keeps or
//! returns free pages and the pool decommits slots in batches, leak or not.
//!
//! The process's heap is shared with every thread, and the other tests of
//! this binary run in parallel threads, so the measurement runs in a child
//! process that runs only `leak_child`.

use std::process::Command;

use husk::plugin::World;
use husk::sandbox::Limits;
use serde_json::json;

use crate::support::{job, load_as, output, sandbox};

const CHILD_ENV: &str = "HUSK_LEAK_CHILD";
/// How much the heap in use may grow between job 1,000 and job 5,000: 64
/// KiB, 16 bytes a job. A job's own allocations are a few kilobytes (its
/// input, output, store and instance state), so one left behind per job is
/// far above this.
const HEAP_TOLERANCE: u64 = 64 << 10;
/// How many more mappings there may be (a thread's stack and guard page
/// started lazily by a runtime, say); one per job would be 4,000.
const MAPS_TOLERANCE: usize = 8;
/// Jobs run before the first measurement.
const WARM_UP: u32 = 1_000;

/// Bytes the C allocator (Rust's global allocator here) has handed out and
/// not had back: in its arenas and in chunks it mapped for large requests.
#[allow(unsafe_code)]
fn heap_in_use() -> u64 {
    // SAFETY: mallinfo2 takes no arguments and returns a plain struct by
    // value; glibc documents it as thread-safe (it locks each arena).
    let info = unsafe { libc::mallinfo2() };
    (info.uordblks + info.hblkhd) as u64
}

fn mappings() -> usize {
    std::fs::read_to_string("/proc/self/maps").unwrap().lines().count()
}

#[test]
fn thousand_jobs_do_not_grow_the_heap_or_the_mappings() {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "leak::leak_child", "--ignored", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "child failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("1 passed"), "the child ran the measurement:\n{stdout}");
}

#[test]
#[ignore = "run by thousand_jobs_do_not_grow_the_heap_or_the_mappings in its own process"]
fn leak_child() {
    assert_eq!(std::env::var(CHILD_ENV).as_deref(), Ok("1"), "run only as a child process");
    let sandbox = sandbox();
    let plugin = load_as(&sandbox, "transform", World::Operation);
    let limits = Limits::default();
    let jobs: u32 = std::env::var("HUSK_LEAK_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(5_000);
    let mut warm = (0, 0);
    for i in 1..=jobs {
        let execution = sandbox.execute(&plugin, &job(1, json!({ "name": i.to_string() })), &limits, None).unwrap();
        assert_eq!(output(&execution)["greeting"], format!("hello, {i}"));
        if i == WARM_UP {
            warm = (heap_in_use(), mappings());
        }
    }
    let (heap, maps) = (heap_in_use(), mappings());
    println!("after {WARM_UP} jobs: {} heap bytes in use, {} mappings; after {jobs}: {heap}, {maps}", warm.0, warm.1);
    assert!(
        heap <= warm.0 + HEAP_TOLERANCE,
        "the heap in use grew by {} bytes over {} jobs",
        heap.saturating_sub(warm.0),
        jobs - WARM_UP
    );
    assert!(
        maps <= warm.1 + MAPS_TOLERANCE,
        "{} more mappings after {} jobs",
        maps.saturating_sub(warm.1),
        jobs - WARM_UP
    );
}
