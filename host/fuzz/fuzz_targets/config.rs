//! `husk.toml` parsing: see `../src/config.rs`, shared with the test that
//! replays and fuzzes it on every run (`tests/all/fuzz.rs`).

#![no_main]

#[path = "../src/config.rs"]
mod target;

libfuzzer_sys::fuzz_target!(|data: &[u8]| target::check(data));
