//! The HTTP API: see `../src/api.rs`, shared with the test that
//! replays and fuzzes it on every run (`tests/all/fuzz.rs`).

#![no_main]

#[path = "../src/api.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::check(data));
