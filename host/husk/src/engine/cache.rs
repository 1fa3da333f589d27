//! The on-disk compile cache: compiled components keyed by the content hash
//! of their WebAssembly and by the engine's compatibility hash, so a second
//! load of the same component skips Cranelift.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;

use super::CodeSource;

/// A directory of precompiled components for one engine configuration.
///
/// Entries are machine code loaded into this process: the directory is
/// husk's own. It is created `0700`, and one that another user owns or that
/// its group or others can write to is not used ([`CacheError::NotPrivate`]).
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
}

/// Why a cache directory is not used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The directory cannot be created or read.
    #[error("cannot use compile cache directory {path}: {source}")]
    Io {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Someone other than husk's user could put machine code in it.
    #[error(
        "compile cache directory {path} is not husk's own ({reason}): someone else could put machine code there for husk to run; make it owned by this user with mode 0700, or use another directory"
    )]
    NotPrivate {
        /// The directory.
        path: PathBuf,
        /// Who else can write to it.
        reason: String,
    },
}

impl CompileCache {
    /// Opens (creating if needed, mode `0700`) the cache under `root` for
    /// `engine`: one subdirectory per engine compatibility hash.
    ///
    /// # Errors
    ///
    /// [`CacheError::NotPrivate`] when `root` or the subdirectory is owned by
    /// another user or writable by its group or by others;
    /// [`CacheError::Io`] when it cannot be created or read.
    pub(super) fn open(root: &Path, engine: &wasmtime::Engine) -> Result<Self, CacheError> {
        let mut hasher = Sha256Hasher::default();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let dir = root.join(hex(&hasher.0.finalize()[..12]));
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| CacheError::Io { path, source }
        };
        // The root is checked before anything is made in it.
        for path in [root, dir.as_path()] {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path).map_err(io(path))?;
            let metadata = std::fs::metadata(path).map_err(io(path))?;
            if let Some(reason) = not_private(&metadata) {
                return Err(CacheError::NotPrivate { path: path.to_owned(), reason });
            }
        }
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

    /// Loads the compiled component from the cache, or compiles it. A
    /// fresh compilation is stored only when the caller keeps it
    /// ([`Compiled::keep`]), after it loaded: a component refused at load
    /// leaves no entry. A cache entry that cannot be read or loaded is
    /// replaced.
    pub(super) fn load_or_compile(&self, engine: &wasmtime::Engine, wasm: &[u8]) -> wasmtime::Result<Compiled> {
        let path = self.path_for(wasm);
        if path.exists() {
            // Read, not mapped: a file truncated under a mapping would
            // crash the process (SIGBUS) when the code is next touched.
            match std::fs::read(&path).map_err(wasmtime::Error::from).and_then(|bytes| deserialize(engine, &bytes)) {
                Ok(component) => return Ok(Compiled { component, code_source: CodeSource::Cache, entry: None }),
                Err(error) => {
                    tracing::warn!(path = %path.display(), error = %format!("{error:#}"), "replacing unusable cache entry")
                }
            }
        }
        let compiled = engine.precompile_component(wasm)?;
        let component = deserialize(engine, &compiled)?;
        Ok(Compiled { component, code_source: CodeSource::Compiled, entry: Some((path, compiled)) })
    }
}

/// A component [`super::Engine::compile`] compiled or read from the cache.
pub struct Compiled {
    component: Component,
    code_source: CodeSource,
    /// Where a fresh compilation goes in the cache, and its bytes.
    entry: Option<(PathBuf, Vec<u8>)>,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled").field("code_source", &self.code_source).finish_non_exhaustive()
    }
}

impl Compiled {
    pub(super) fn new(component: Component) -> Self {
        Self { component, code_source: CodeSource::Compiled, entry: None }
    }

    /// The compiled component.
    pub fn component(&self) -> &Component {
        &self.component
    }

    /// Where its machine code came from.
    pub fn code_source(&self) -> CodeSource {
        self.code_source
    }

    /// Stores a fresh compilation in the compile cache (once the component
    /// proved usable), and returns the component.
    pub fn keep(self) -> Component {
        if let Some((path, bytes)) = &self.entry
            && let Err(error) = write_atomically(path, bytes)
        {
            tracing::warn!(path = %path.display(), %error, "cannot write compile cache entry");
        }
        self.component
    }
}

/// Who other than this process's user could write to a file with
/// `metadata`; `None` when no one.
fn not_private(metadata: &std::fs::Metadata) -> Option<String> {
    let owner = metadata.uid();
    let me = rustix::process::geteuid().as_raw();
    if owner != me {
        return Some(format!("owned by uid {owner}, not by husk's uid {me}"));
    }
    let mode = metadata.mode();
    (mode & 0o022 != 0).then(|| format!("mode {:o} lets its group or others write to it", mode & 0o777))
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
    // directory only husk's user can write (`CompileCache::open` refuses any
    // other); wasmtime checks the header and engine compatibility.
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
