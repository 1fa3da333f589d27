//! The guest SDK tooling built into husk: the WIT contract, C and Go
//! bindings for it, and the wrapping of a core WebAssembly module into a
//! component (with husk's WASI preview 1 adapter for Go).
//!
//! Rust guests use the `husk-guest` crate; Python and JavaScript guests use
//! componentize-py and componentize-js with the contract written by
//! [`write_wit`]. C has no such tool that is quick to install, so husk does
//! the two steps around `clang` itself: [`c_bindings`] generates the C
//! header, source and component-type object for a world (what
//! `wit-bindgen c` does), and [`wrap`] turns the linked core module into a
//! component (what `wasm-tools component new` does). Go is served the same
//! way: [`go_bindings`] (what `wit-bindgen go` does), then [`wrap`] with
//! the world named, since Go's module carries no component type.

use std::path::{Path, PathBuf};

use wit_bindgen_core::wit_parser::Resolve;

mod go;
pub mod preview1;

pub use go::go_bindings;

/// The WIT contract husk hosts (`wit/worker.wit`), package
/// `husk:worker@0.1.0`.
pub const WIT: &str = include_str!("../../../../wit/worker.wit");

/// The worlds a guest can be built against.
pub const WORLDS: [&str; 3] = ["operation", "error-mapper", "plugin"];

/// Errors of the SDK tooling.
#[derive(Debug, thiserror::Error)]
pub enum SdkError {
    /// The world is not one of [`WORLDS`].
    #[error("unknown world `{0}` (expected one of: operation, error-mapper, plugin)")]
    UnknownWorld(String),
    /// Generating bindings failed.
    #[error("cannot generate {language} bindings for world `{world}`: {reason}")]
    Bindings {
        /// The language.
        language: &'static str,
        /// The world.
        world: String,
        /// Why.
        reason: String,
    },
    /// The core module could not be made into a component.
    #[error("cannot make a component of {source_name}: {reason}")]
    Wrap {
        /// The module's file.
        source_name: String,
        /// wit-component's reason.
        reason: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
}

fn write(path: PathBuf, bytes: &[u8]) -> Result<PathBuf, SdkError> {
    std::fs::write(&path, bytes).map_err(|error| SdkError::Io { path: path.clone(), error })?;
    Ok(path)
}

fn create_dir(dir: &Path) -> Result<(), SdkError> {
    std::fs::create_dir_all(dir).map_err(|error| SdkError::Io { path: dir.to_owned(), error })
}

/// Writes the contract to `dir/worker.wit` (creating `dir`), the layout
/// componentize-py's and componentize-js's `--wit`/`-d` options take.
///
/// # Errors
///
/// [`SdkError::Io`] when the directory or file cannot be written.
pub fn write_wit(dir: &Path) -> Result<PathBuf, SdkError> {
    create_dir(dir)?;
    write(dir.join("worker.wit"), WIT.as_bytes())
}

/// Generates the C bindings of `world` — of husk's contract, or of the
/// package in the WIT directory `wit` (whose `deps/` may hold husk's
/// contract and WASI packages) — into `dir`: `<world>.h`, `<world>.c`
/// and `<world>_component_type.o` (the world's type, which the linked
/// module must carry for [`wrap`]), with `-` in the world's name written
/// `_`. Returns the files written.
///
/// # Errors
///
/// [`SdkError::UnknownWorld`], [`SdkError::Bindings`], or
/// [`SdkError::Io`] when a file cannot be written.
pub fn c_bindings(world: &str, wit: Option<&Path>, dir: &Path) -> Result<Vec<PathBuf>, SdkError> {
    let (mut resolve, world_id) = bindings_world("C", world, wit)?;
    let failed = bindings_failed("C", world);
    let mut files = wit_bindgen_core::Files::default();
    wit_bindgen_c::Opts::default().build().generate(&mut resolve, world_id, &mut files).map_err(failed)?;
    create_dir(dir)?;
    files.iter().map(|(name, bytes)| write(dir.join(name), bytes)).collect()
}

/// The error of generating `language` bindings of `world`.
fn bindings_failed<'a>(language: &'static str, world: &'a str) -> impl Fn(anyhow::Error) -> SdkError + 'a {
    move |e| SdkError::Bindings { language, world: world.to_owned(), reason: format!("{e:#}") }
}

/// The WIT of `world`, for bindings in `language`: husk's contract, or the
/// package in the WIT directory `wit`.
fn bindings_world(
    language: &'static str,
    world: &str,
    wit: Option<&Path>,
) -> Result<(Resolve, wit_bindgen_core::wit_parser::WorldId), SdkError> {
    if wit.is_none() && !WORLDS.contains(&world) {
        return Err(SdkError::UnknownWorld(world.to_owned()));
    }
    let failed = bindings_failed(language, world);
    let mut resolve = Resolve::default();
    let package = match wit {
        Some(wit) => resolve.push_dir(wit).map_err(&failed)?.0,
        None => resolve.push_str("worker.wit", WIT).map_err(&failed)?,
    };
    let world_id = resolve.select_world(&[package], Some(world)).map_err(&failed)?;
    Ok((resolve, world_id))
}

/// Makes a component of a core module: one linked with the bindings of
/// [`c_bindings`], whose world comes from its component-type section, or
/// one built by Go with [`go_bindings`], which carries no component type:
/// `world` (one of [`WORLDS`]) names the world of husk's contract to embed
/// then. A module importing WASI preview 1 (Go's runtime does) is linked
/// with husk's own adapter ([`preview1`]); any other import must be one of
/// the world's.
///
/// # Errors
///
/// [`SdkError::UnknownWorld`], or [`SdkError::Wrap`] naming `source_name`
/// when the module has no component type and no world is given, imports
/// something else, or does not validate.
pub fn wrap(core: &[u8], source_name: &str, world: Option<&str>) -> Result<Vec<u8>, SdkError> {
    let failed = |e: anyhow::Error| SdkError::Wrap { source_name: source_name.to_owned(), reason: format!("{e:#}") };
    let mut core = core.to_vec();
    if let Some(world) = world {
        if !WORLDS.contains(&world) {
            return Err(SdkError::UnknownWorld(world.to_owned()));
        }
        let mut resolve = Resolve::default();
        let package = resolve.push_str("worker.wit", WIT).map_err(failed)?;
        let world_id = resolve.select_world(&[package], Some(world)).map_err(failed)?;
        wit_component::embed_component_metadata(&mut core, &resolve, world_id, wit_component::StringEncoding::UTF8)
            .map_err(failed)?;
    }
    let mut encoder = wit_component::ComponentEncoder::default();
    encoder.validate(true).module(&core).map_err(failed)?;
    if preview1::imported_by(&core) {
        encoder.adapter(preview1::MODULE, &preview1::adapter()).map_err(failed)?;
    }
    encoder.encode().map_err(failed)
}
