//! The fuzz targets of `host/fuzz` as ordinary tests, on every run: each
//! replays its committed seeds (and any crash saved under
//! `host/fuzz/artifacts`), then checks random inputs. The targets are
//! structure-aware (`wasm-smith` and `arbitrary` make a component or a
//! request of any bytes), so random bytes reach deep; the config target
//! gets its seeds mutated. A new seed each run (printed); a failure saves
//! its input where `cargo fuzz run <target> <file>` replays it and names
//! the seed that `HUSK_FUZZ_SEED` repeats. `HUSK_FUZZ_CASES` sets how many
//! random inputs each target gets. Long, coverage-guided runs: `scripts/fuzz`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[path = "../../host/fuzz/src/api.rs"]
mod api_target;
#[path = "../../host/fuzz/src/component.rs"]
mod component_target;
#[path = "../../host/fuzz/src/config.rs"]
mod config_target;

/// How the random inputs of a target are made.
enum Inputs {
    /// Random bytes, up to this many.
    Bytes(usize),
    /// The target's seeds, each mutated a few times.
    MutatedSeeds,
}

#[test]
fn fuzz_component() {
    fuzz("component", component_target::check, 1_000, Inputs::Bytes(16 << 10));
}

#[test]
fn fuzz_api() {
    fuzz("api", api_target::check, 10_000, Inputs::Bytes(1 << 10));
}

#[test]
fn fuzz_config() {
    fuzz("config", config_target::check, 10_000, Inputs::MutatedSeeds);
}

fn fuzz(target: &str, check: fn(&[u8]), cases: usize, inputs: Inputs) {
    let started = Instant::now();
    let fuzz_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let seeds: Vec<Vec<u8>> = ["corpus", "artifacts"]
        .iter()
        .flat_map(|kind| files(&fuzz_dir.join(kind).join(target)))
        .map(|path| std::fs::read(path).unwrap())
        .collect();
    for (i, seed) in seeds.iter().enumerate() {
        if catch_unwind(AssertUnwindSafe(|| check(seed))).is_err() {
            panic!("fuzz target {target} failed on its committed seed or artifact #{i}");
        }
    }
    let seed = match std::env::var("HUSK_FUZZ_SEED") {
        Ok(seed) => seed.parse().expect("HUSK_FUZZ_SEED is a number"),
        Err(_) => fastrand::u64(..),
    };
    let cases = std::env::var("HUSK_FUZZ_CASES").map_or(cases, |n| n.parse().expect("HUSK_FUZZ_CASES is a number"));
    let mut rng = fastrand::Rng::with_seed(seed);
    for case in 0..cases {
        let data = match inputs {
            Inputs::Bytes(max) => random_bytes(&mut rng, max),
            Inputs::MutatedSeeds => {
                let pick = rng.usize(..seeds.len());
                mutated(&mut rng, &seeds[pick])
            }
        };
        if catch_unwind(AssertUnwindSafe(|| check(&data))).is_err() {
            let saved = save(target, seed, case, &data);
            panic!(
                "fuzz target {target} failed on random input {case} (HUSK_FUZZ_SEED={seed}); input saved at {}",
                saved.display()
            );
        }
    }
    eprintln!(
        "fuzz {target}: {} seeds and {cases} random inputs (HUSK_FUZZ_SEED={seed}) in {:.1?}",
        seeds.len(),
        started.elapsed()
    );
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
    files.sort();
    files
}

fn random_bytes(rng: &mut fastrand::Rng, max: usize) -> Vec<u8> {
    let len = rng.usize(..=max);
    std::iter::repeat_with(|| rng.u8(..)).take(len).collect()
}

/// `seed` with one to eight random edits: a byte replaced, bytes inserted
/// (random, or a piece of the seed), a range removed.
fn mutated(rng: &mut fastrand::Rng, seed: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..rng.usize(1..=8) {
        let at = rng.usize(..=data.len());
        match rng.u8(..4) {
            0 if at < data.len() => data[at] = rng.u8(..),
            1 => {
                let bytes = random_bytes(rng, 16);
                data.splice(at..at, bytes);
            }
            2 if !seed.is_empty() => {
                let start = rng.usize(..seed.len());
                let piece = &seed[start..seed.len().min(start + rng.usize(1..=64))];
                data.splice(at..at, piece.iter().copied());
            }
            _ => {
                let end = data.len().min(at + rng.usize(1..=32));
                data.drain(at..end);
            }
        }
    }
    data
}

/// Writes a failing input under the target directory; its path.
fn save(target: &str, seed: u64, case: usize, data: &[u8]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-found").join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("seed-{seed}-input-{case}"));
    std::fs::write(&path, data).unwrap();
    path
}
