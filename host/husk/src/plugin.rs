//! Plugins: components loaded, validated against the world they claim, and
//! kept pre-instantiated so each job only has to instantiate.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use wasmtime::component::Component;

use crate::bindings::error_mapper::ErrorMapperPre;
use crate::bindings::operation::OperationPre;
use crate::capability::Grants;
use crate::engine::{CodeSource, Engine, content_digest};
use crate::guest::JobState;
pub use crate::linker::provided as provided_imports;
use crate::linker::{Linked, Linkers, Refused};

/// The world of the WIT contract a plugin is loaded as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum World {
    /// Exports `execute`: runs jobs.
    Operation,
    /// Exports `classify`: classifies faults.
    ErrorMapper,
}

impl fmt::Display for World {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            World::Operation => "operation",
            World::ErrorMapper => "error-mapper",
        })
    }
}

/// Why a component could not be loaded as a plugin. `source` names the file
/// (or says `component` for bytes).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PluginError {
    /// The file could not be read.
    #[error("cannot read {source_name}: {error}")]
    Read {
        /// The file.
        source_name: String,
        /// Why.
        error: std::io::Error,
    },
    /// The bytes are not WebAssembly at all.
    #[error("{source_name} is not a WebAssembly component (no `\\0asm` header)")]
    NotWasm {
        /// The file.
        source_name: String,
    },
    /// The bytes are machine code precompiled by `husk compile`, where only
    /// a component is accepted: husk loads precompiled code only from the
    /// operator's own files, when the operator allows it.
    #[error(
        "{source_name} is machine code precompiled by `husk compile`, not a component: only a component (.wasm) is accepted here, which husk compiles itself (precompiled code is loaded only from the operator's own files, with `allow_precompiled = true` in husk.toml or `husk run --allow-precompiled`)"
    )]
    Precompiled {
        /// The file.
        source_name: String,
    },
    /// The bytes are a core module, not a component.
    #[error(
        "{source_name} is a core WebAssembly module, not a component (build for wasm32-wasip2, or wrap it with `wasm-tools component new`)"
    )]
    CoreModule {
        /// The file.
        source_name: String,
    },
    /// The component is malformed, or precompiled for an incompatible engine.
    #[error("{source_name} cannot be compiled: {reason}")]
    Invalid {
        /// The file.
        source_name: String,
        /// wasmtime's reason.
        reason: String,
    },
    /// The component imports something husk does not provide: an unknown
    /// interface, a version husk does not provide, or an interface whose
    /// type does not match husk's.
    #[error("{source_name} imports `{import}`, {reason}")]
    Imports {
        /// The file.
        source_name: String,
        /// The import, named as the component names it (e.g.
        /// `wasi:http/types@0.2.0`).
        import: String,
        /// Why husk cannot provide it, and what it provides instead.
        reason: String,
    },
    /// The component does not export what its world requires, or with the
    /// wrong type.
    #[error("{source_name} is not a husk:worker `{world}` component: {reason}")]
    WrongWorld {
        /// The file.
        source_name: String,
        /// The world it was loaded as.
        world: World,
        /// What is missing or mistyped.
        reason: String,
    },
}

/// A loaded, validated component, ready to instantiate. Cheap to clone.
#[derive(Clone)]
pub struct Plugin {
    inner: Arc<Inner>,
}

struct Inner {
    digest: String,
    world: World,
    code_source: CodeSource,
    imports: Vec<String>,
    operation: Option<OperationPre<JobState>>,
    error_mapper: Option<ErrorMapperPre<JobState>>,
}

impl fmt::Debug for Plugin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plugin")
            .field("digest", &self.inner.digest)
            .field("world", &self.inner.world)
            .field("code_source", &self.inner.code_source)
            .field("imports", &self.inner.imports)
            .field("also_error_mapper", &self.is_error_mapper())
            .finish()
    }
}

impl Plugin {
    /// Compiles `bytes` (a component, never precompiled machine code) and
    /// links it as `world`: what `Sandbox::load_bytes` does.
    pub(crate) fn compile(
        engine: &Engine,
        linkers: &Linkers,
        bytes: &[u8],
        world: World,
        source_name: &str,
        grants: &Grants,
    ) -> Result<Self, PluginError> {
        if Engine::is_precompiled_component(bytes) {
            return Err(PluginError::Precompiled { source_name: source_name.to_owned() });
        }
        let invalid =
            |e: wasmtime::Error| PluginError::Invalid { source_name: source_name.to_owned(), reason: format!("{e:#}") };
        if wasmparser::Parser::is_core_wasm(bytes) {
            return Err(PluginError::CoreModule { source_name: source_name.to_owned() });
        }
        if !wasmparser::Parser::is_component(bytes) && !looks_like_wat(bytes) {
            return Err(PluginError::NotWasm { source_name: source_name.to_owned() });
        }
        let compiled = engine.compile(bytes).map_err(invalid)?;
        let plugin = Self::validate(
            engine,
            linkers,
            compiled.component(),
            compiled.code_source(),
            bytes,
            world,
            source_name,
            grants,
        )?;
        // Only a component that loaded is kept in the compile cache.
        compiled.keep();
        Ok(plugin)
    }

    /// [`Plugin::compile`], or the loading of precompiled machine code.
    ///
    /// # Safety
    ///
    /// As `Sandbox::load_trusted_bytes`.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn compile_trusted(
        engine: &Engine,
        linkers: &Linkers,
        bytes: &[u8],
        world: World,
        source_name: &str,
        grants: &Grants,
    ) -> Result<Self, PluginError> {
        if !Engine::is_precompiled_component(bytes) {
            return Self::compile(engine, linkers, bytes, world, source_name, grants);
        }
        // SAFETY: this function's own contract, passed on to its caller.
        let component = unsafe { engine.load_precompiled(bytes) }
            .map_err(|e| PluginError::Invalid { source_name: source_name.to_owned(), reason: format!("{e:#}") })?;
        Self::validate(engine, linkers, &component, CodeSource::Precompiled, bytes, world, source_name, grants)
    }

    /// Links a compiled component to the interfaces it imports and checks
    /// that it exports `world`.
    #[expect(clippy::too_many_arguments, reason = "the component, where it comes from, and what it is loaded as")]
    fn validate(
        engine: &Engine,
        linkers: &Linkers,
        component: &Component,
        code_source: CodeSource,
        bytes: &[u8],
        world: World,
        source_name: &str,
        grants: &Grants,
    ) -> Result<Self, PluginError> {
        let refused =
            |Refused { import, reason }| PluginError::Imports { source_name: source_name.to_owned(), import, reason };
        let Linked { linker, imports } = linkers.link(engine.wasmtime(), component, grants).map_err(refused)?;
        let instance_pre = linker.instantiate_pre(component).map_err(|e| refused(mismatch(&e, &imports)))?;
        let operation = OperationPre::new(instance_pre.clone());
        let error_mapper = ErrorMapperPre::new(instance_pre);
        let wrong_world = |e: wasmtime::Error| PluginError::WrongWorld {
            source_name: source_name.to_owned(),
            world,
            reason: format!("{e:#}"),
        };
        let (operation, error_mapper) = match world {
            World::Operation => (Some(operation.map_err(wrong_world)?), error_mapper.ok()),
            World::ErrorMapper => (operation.ok(), Some(error_mapper.map_err(wrong_world)?)),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                digest: content_digest(bytes),
                world,
                code_source,
                imports,
                operation,
                error_mapper,
            }),
        })
    }

    /// SHA-256 of the component's bytes, hex: the plugin's version identity.
    pub fn digest(&self) -> &str {
        &self.inner.digest
    }

    /// The world the plugin was loaded as.
    pub fn world(&self) -> World {
        self.inner.world
    }

    /// Where the plugin's machine code came from (compiled now, the cache,
    /// or a precompiled file).
    pub fn code_source(&self) -> CodeSource {
        self.inner.code_source
    }

    /// The interfaces linked for the plugin: exactly those its component
    /// imports, named as it imports them (with versions, e.g.
    /// `wasi:io/streams@0.2.3`), in the component's order. Nothing else is
    /// linked; see [`provided_imports`].
    pub fn imports(&self) -> &[String] {
        &self.inner.imports
    }

    /// Whether the plugin exports `execute` (it can run jobs).
    pub fn is_operation(&self) -> bool {
        self.inner.operation.is_some()
    }

    /// Whether the plugin exports `classify` (it can be an error mapper).
    pub fn is_error_mapper(&self) -> bool {
        self.inner.error_mapper.is_some()
    }

    pub(crate) fn operation_pre(&self) -> Option<&OperationPre<JobState>> {
        self.inner.operation.as_ref()
    }

    pub(crate) fn error_mapper_pre(&self) -> Option<&ErrorMapperPre<JobState>> {
        self.inner.error_mapper.as_ref()
    }
}

/// The refusal for a component whose imports are all provided but which
/// wasmtime would not link (an interface whose functions or types do not
/// match husk's): names the import wasmtime's error names.
fn mismatch(error: &wasmtime::Error, imports: &[String]) -> Refused {
    let message = error.to_string();
    let import = imports.iter().find(|import| message.contains(&format!("`{import}`")));
    Refused {
        import: import.cloned().unwrap_or_else(|| "one of its imports".to_owned()),
        reason: format!("which does not match what husk provides: {error:#}"),
    }
}

/// The bytes of the file at `path`, and its name in errors.
///
/// # Errors
///
/// [`PluginError::Read`] when it cannot be read.
pub fn read(path: &Path) -> Result<(Vec<u8>, String), PluginError> {
    let source_name = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => Ok((bytes, source_name)),
        Err(error) => Err(PluginError::Read { source_name, error }),
    }
}

/// Whether `bytes` could be the WebAssembly text format (a component written
/// in WAT), which wasmtime also accepts.
fn looks_like_wat(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|text| text.trim_start().starts_with("(component"))
}
