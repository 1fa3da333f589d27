//! The on-disk compile cache: compiled components keyed by the content hash
//! of their WebAssembly and by the engine's compatibility hash, so a second
//! load of the same component skips Cranelift.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::CodeSource;

/// A directory of precompiled components for one engine configuration.
///
/// Entries are machine code loaded into this process: the directory must be
/// writable only by the operator running husk.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
}

impl CompileCache {
    /// Opens (creating if needed) the cache under `root` for `engine`: one
    /// subdirectory per engine compatibility hash.
    pub(super) fn open(root: &Path, engine: &wasmtime::Engine) -> std::io::Result<Self> {
        let mut hasher = Sha256Hasher::default();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let dir = root.join(hex(&hasher.0.finalize()[..12]));
        std::fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    /// The directory holding this engine's entries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cache file for a component with these bytes.
    pub fn path_for(&self, wasm: &[u8]) -> PathBuf {
        self.dir.join(format!("{}.cwasm", content_digest(wasm)))
    }

    /// Loads the compiled component from the cache, or compiles it and
    /// stores it. A cache entry that cannot be read or loaded is replaced.
    pub(super) fn load_or_compile(
        &self,
        engine: &wasmtime::Engine,
        wasm: &[u8],
    ) -> wasmtime::Result<(Component, CodeSource)> {
        let path = self.path_for(wasm);
        if path.exists() {
            // Read, not mapped: a file truncated under a mapping would
            // crash the process (SIGBUS) when the code is next touched.
            match std::fs::read(&path).map_err(wasmtime::Error::from).and_then(|bytes| deserialize(engine, &bytes)) {
                Ok(component) => return Ok((component, CodeSource::Cache)),
                Err(error) => {
                    tracing::warn!(path = %path.display(), error = %format!("{error:#}"), "replacing unusable cache entry")
                }
            }
        }
        let compiled = engine.precompile_component(wasm)?;
        if let Err(error) = write_atomically(&path, &compiled) {
            tracing::warn!(path = %path.display(), %error, "cannot write compile cache entry");
        }
        Ok((deserialize(engine, &compiled)?, CodeSource::Compiled))
    }
}

/// Hex SHA-256 of `bytes`: a component's content digest.
pub fn content_digest(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[allow(unsafe_code)]
fn deserialize(engine: &wasmtime::Engine, compiled: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `compiled` was produced by `precompile_component` on an
    // engine with this compatibility hash, now or earlier into a cache
    // directory only husk's operator can write; wasmtime checks the header
    // and engine compatibility.
    unsafe { Component::deserialize(engine, compiled) }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Feeds `Hash` output into SHA-256: a hash that is stable across runs,
/// unlike `DefaultHasher`.
#[derive(Default)]
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        u64::from_le_bytes(digest[..8].try_into().unwrap_or_default())
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}
