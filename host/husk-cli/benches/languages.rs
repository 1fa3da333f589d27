//! The same `transform` operation (and `mapper`) written in Rust, Python,
//! JavaScript, C and Go: component size, first compile time, load time from
//! the compile cache, and the per-job cost — instantiate from the pooling
//! allocator (copy-on-write memory images) plus execute — as p50/p99.
//!
//! `scripts/build-guests` first (the Python, JavaScript, C and Go examples),
//! then `cargo bench -p husk-cli --bench languages [-- RUNS]` (default
//! 1,000 jobs per language; one job at a time on one thread).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use husk::engine::{Engine, EngineConfig};
use husk::fault::Fault;
use husk::plugin::World;
use husk::sandbox::{Ending, Job, Limits, Sandbox};

fn component(language: &str, name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/guests");
    if language == "rust" {
        Path::new(env!("HUSK_GUEST_DIR")).join(format!("{name}.wasm"))
    } else {
        root.join(language).join(format!("{name}.wasm"))
    }
}

fn sandbox(cache: Option<&Path>, fuel: bool) -> Sandbox {
    let config =
        EngineConfig::default().with_max_instances(16).with_cache_dir(cache.map(Path::to_owned)).with_fuel(fuel);
    Sandbox::new(Engine::new(config).unwrap()).unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e3
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let started = Instant::now();
    let value = f();
    (value, started.elapsed())
}

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1_000);
    println!(
        "| language | component | first compile | cached load | instantiate + execute p50 / p99 | peak memory: job / mapper | classify p50 | fuel: job / classify |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for language in ["rust", "python", "js", "c", "go"] {
        let path = component(language, "transform");
        let Ok(wasm) = std::fs::read(&path) else {
            println!("| {language} | missing: {} (run scripts/build-guests) | | | | | | |", path.display());
            continue;
        };
        let name = path.display().to_string();

        // First compile: a fresh engine, no cache.
        let fresh = sandbox(None, false);
        let (plugin, compile) = timed(|| fresh.load_bytes(&wasm, World::Operation, &name).unwrap());
        drop(plugin);

        // Cached load: the cache is filled once, then read back.
        let cache = tempfile::tempdir().unwrap();
        let cached = sandbox(Some(cache.path()), false);
        cached.load_bytes(&wasm, World::Operation, &name).unwrap();
        let mut loads: Vec<Duration> =
            (0..5).map(|_| timed(|| cached.load_bytes(&wasm, World::Operation, &name).unwrap()).1).collect();
        loads.sort();

        // Per job: a fresh instance from the pool, then execute.
        let plugin = cached.load_bytes(&wasm, World::Operation, &name).unwrap();
        let limits = Limits::default();
        let mut peak = 0;
        let mut jobs: Vec<Duration> = (0..runs)
            .map(|i| {
                let job = Job {
                    id: format!("bench-{i}"),
                    topic: "bench".into(),
                    attempt: 1,
                    input: br#"{"name":"bench","amount":12.5}"#.to_vec(),
                };
                let (execution, took) = timed(|| cached.execute(&plugin, &job, &limits, None).unwrap());
                assert!(matches!(execution.ending, Ending::Returned(_)), "{language}: {:?}", execution.ending);
                peak = peak.max(execution.peak_memory);
                took
            })
            .collect();
        jobs.sort();

        let mapper_wasm = std::fs::read(component(language, "mapper")).unwrap();
        let mapper = cached.load_bytes(&mapper_wasm, World::ErrorMapper, "mapper").unwrap();
        let fault = Fault::new("payment.declined", r#"{"reason":"insufficient-funds"}"#);
        let mapper_limits = Limits::error_mapper().with_fuel(None);
        let mut mapper_peak = 0;
        let mut classify: Vec<Duration> = (0..runs.min(200))
            .map(|_| {
                let (classified, took) = timed(|| cached.classify(&mapper, &fault, &mapper_limits).unwrap());
                assert!(matches!(classified.ending, Ending::Returned(_)), "{language}: {:?}", classified.ending);
                mapper_peak = mapper_peak.max(classified.peak_memory);
                took
            })
            .collect();
        classify.sort();

        // Fuel: what one job and one classification cost, against the
        // budgets a topic (and `Limits::error_mapper`'s 10 million) set.
        let metered = sandbox(Some(cache.path()), true);
        let plugin = metered.load_bytes(&wasm, World::Operation, &name).unwrap();
        let mapper = metered.load_bytes(&mapper_wasm, World::ErrorMapper, "mapper").unwrap();
        let unlimited = Limits::default().with_fuel(Some(u64::MAX / 2));
        let job = Job {
            id: "fuel".into(),
            topic: "bench".into(),
            attempt: 1,
            input: br#"{"name":"bench","amount":12.5}"#.to_vec(),
        };
        let job_fuel = metered.execute(&plugin, &job, &unlimited, None).unwrap().fuel_consumed.unwrap_or(0);
        let classify_fuel = metered.classify(&mapper, &fault, &unlimited).unwrap().fuel_consumed.unwrap_or(0);

        println!(
            "| {language} | {:.2} MB | {:.0} ms | {:.1} ms | {:.3} / {:.3} ms | {:.1} / {:.1} MB | {:.3} ms | {job_fuel} / {classify_fuel} |",
            wasm.len() as f64 / 1e6,
            compile.as_secs_f64() * 1e3,
            percentile(&loads, 0.5),
            percentile(&jobs, 0.5),
            percentile(&jobs, 0.99),
            peak as f64 / 1e6,
            mapper_peak as f64 / 1e6,
            percentile(&classify, 0.5),
        );
    }
}
