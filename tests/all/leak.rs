//! No per-job leak: 1,000 sequential jobs leave the process's resident
//! memory where it was after the first 100.
//!
//! Resident memory is a property of the whole process, and the other tests
//! of this binary run in parallel threads, so the measurement runs in a
//! child process that runs only `leak_child`.

use std::process::Command;

use husk::plugin::World;
use husk::sandbox::Limits;
use serde_json::json;

use crate::support::{job, load_as, output, sandbox};

const CHILD_ENV: &str = "HUSK_LEAK_CHILD";
/// How much resident memory may move between job 100 and job 1,000. The
/// pool returns guest memory to the kernel in batches, so a few slots' worth
/// of pages come and go; a leak of even 1 KiB per job would exceed this.
const TOLERANCE: u64 = 768 << 10;

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * rustix::param::page_size() as u64
}

#[test]
fn thousand_jobs_do_not_grow_resident_memory() {
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
#[ignore = "run by thousand_jobs_do_not_grow_resident_memory in its own process"]
fn leak_child() {
    assert_eq!(std::env::var(CHILD_ENV).as_deref(), Ok("1"), "run only as a child process");
    let sandbox = sandbox();
    let plugin = load_as(&sandbox, "transform", World::Operation);
    let limits = Limits::default();
    let jobs: u32 = std::env::var("HUSK_LEAK_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(1_000);
    let mut after_100 = 0;
    for i in 1..=jobs {
        let execution = sandbox.execute(&plugin, &job(1, json!({ "name": i.to_string() })), &limits, None).unwrap();
        assert_eq!(output(&execution)["greeting"], format!("hello, {i}"));
        if i == 100 {
            after_100 = resident_bytes();
        }
        if i % 1000 == 0 {
            println!("resident after {i} jobs: {} bytes", resident_bytes());
        }
    }
    let after_last = resident_bytes();
    println!("resident after 100 jobs: {after_100} bytes, after {jobs}: {after_last} bytes");
    assert!(
        after_last <= after_100 + TOLERANCE,
        "resident memory grew by {} bytes over 900 jobs",
        after_last.saturating_sub(after_100)
    );
}
