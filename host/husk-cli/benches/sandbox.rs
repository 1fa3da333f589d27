//! Sandbox benchmarks: instantiate + execute of the trivial JSON transform
//! (the per-job cost husk adds), and loading a component compiled versus
//! from the compile cache.
//!
//! `cargo bench -p husk-cli --bench sandbox`. Before criterion's groups it
//! prints per-job latency percentiles over 20,000 sequential jobs, timed one
//! by one (criterion reports means of batches).

#![allow(missing_docs, reason = "criterion_group! generates an undocumented function")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use husk::engine::{Engine, EngineConfig};
use husk::plugin::{Plugin, World};
use husk::sandbox::{Ending, Job, Limits, Sandbox};

fn transform_path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("HUSK_GUEST_DIR")).join("transform.wasm")
}

fn sandbox(config: EngineConfig) -> Sandbox {
    Sandbox::new(Engine::new(config).unwrap()).unwrap()
}

fn job() -> Job {
    Job { id: "bench".into(), topic: "bench".into(), attempt: 1, input: br#"{"name":"Ada","amount":12.5}"#.to_vec() }
}

fn run_one(sandbox: &Sandbox, plugin: &Plugin, job: &Job, limits: &Limits) {
    let execution = sandbox.execute(plugin, job, limits, None).unwrap();
    assert!(matches!(execution.ending, Ending::Returned(_)));
    black_box(execution);
}

/// Per-job latency percentiles, each job timed on its own.
fn percentiles(label: &str, config: EngineConfig, limits: &Limits) {
    let sandbox = sandbox(config);
    let plugin = sandbox.load(&transform_path(), World::Operation).unwrap();
    let job = job();
    for _ in 0..2_000 {
        run_one(&sandbox, &plugin, &job, limits);
    }
    let mut samples: Vec<Duration> = (0..20_000)
        .map(|_| {
            let started = Instant::now();
            run_one(&sandbox, &plugin, &job, limits);
            started.elapsed()
        })
        .collect();
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)].as_secs_f64() * 1e6;
    println!("{label}: p50 {:.2} µs, p90 {:.2} µs, p99 {:.2} µs (20,000 jobs)", at(0.5), at(0.9), at(0.99));
}

fn instantiate_execute(c: &mut Criterion) {
    let limits = Limits::default();
    let mut group = c.benchmark_group("instantiate+execute transform");
    for (name, config) in configs() {
        let sandbox = sandbox(config);
        let plugin = sandbox.load(&transform_path(), World::Operation).unwrap();
        let job = job();
        group.bench_function(name, |b| b.iter(|| run_one(&sandbox, &plugin, &job, &limits)));
    }
    group.finish();
}

fn load(c: &mut Criterion) {
    let wasm = std::fs::read(transform_path()).unwrap();
    let mut group = c.benchmark_group("load transform");
    group.sample_size(10);
    let uncached = sandbox(EngineConfig::default().with_epoch_tick(None));
    group.bench_function("compile (no cache)", |b| {
        b.iter(|| black_box(uncached.load_bytes(&wasm, World::Operation, "transform").unwrap()))
    });
    let dir = tempfile::tempdir().unwrap();
    let cached = sandbox(EngineConfig::default().with_epoch_tick(None).with_cache_dir(Some(dir.path().into())));
    cached.load_bytes(&wasm, World::Operation, "transform").unwrap();
    group.bench_function("from compile cache", |b| {
        b.iter(|| black_box(cached.load_bytes(&wasm, World::Operation, "transform").unwrap()))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default();
    targets = instantiate_execute, load
}

/// The engine configurations compared: husk's defaults (dirty pages found
/// with `PAGEMAP_SCAN`), fuel on, the pool's memory returned to the kernel
/// after every job (wasmtime's own default), the kept-resident range reset
/// whole with `memset`, and a larger kept-resident range.
fn configs() -> Vec<(&'static str, EngineConfig)> {
    vec![
        ("default", EngineConfig::default()),
        ("fuel", EngineConfig::default().with_fuel(true)),
        ("no keep-resident", EngineConfig::default().with_memory_keep_resident(0)),
        ("memset, no pagemap-scan", EngineConfig::default().with_pagemap_scan(false)),
        ("pagemap-scan 1MiB", EngineConfig::default().with_memory_keep_resident(1 << 20)),
    ]
}

fn main() {
    for (name, config) in configs() {
        let fuel = config.fuel.then_some(10_000_000);
        percentiles(&format!("instantiate+execute transform, {name}"), config, &Limits::default().with_fuel(fuel));
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
