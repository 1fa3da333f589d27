//! `husk sdk`: the guest SDK tooling for languages without a component
//! toolchain of their own (see [`crate::sdk`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use crate::sdk;

/// `husk sdk` and its subcommands.
#[derive(Debug, Args)]
pub(super) struct SdkArgs {
    #[command(subcommand)]
    command: SdkCommand,
}

#[derive(Debug, Subcommand)]
enum SdkCommand {
    /// Write husk's WIT contract (`worker.wit`) into a directory, for
    /// componentize-py (`-d DIR`) or componentize-js (`--wit DIR`).
    Wit {
        /// The directory (created if missing).
        dir: PathBuf,
    },
    /// Generate C bindings of a world: `<world>.h`, `<world>.c` and
    /// `<world>_component_type.o`, as `wit-bindgen c` would.
    CBindings(BindingsArgs),
    /// Generate Go bindings of a world, as `wit-bindgen go` would: a Go
    /// module (`go.mod`, `wit_exports.go`, a package per interface) with
    /// the runtime package it imports vendored in `pkg/`.
    GoBindings(BindingsArgs),
    /// Make a component of a core module built with the C or Go bindings,
    /// as `wasm-tools component new` would; a module importing WASI
    /// preview 1 (Go's) is linked with husk's own adapter.
    Wrap {
        /// The core module (linked by clang/wasm-ld, or built by `go build
        /// -buildmode=c-shared`).
        module: PathBuf,
        /// The world to embed, for a module that carries no component type
        /// (Go's): operation, error-mapper or plugin.
        #[arg(long)]
        world: Option<String>,
        /// The component to write.
        #[arg(long, short)]
        output: PathBuf,
    },
}

/// The arguments of `husk sdk c-bindings` and `husk sdk go-bindings`.
#[derive(Debug, Args)]
struct BindingsArgs {
    /// The world: operation, error-mapper or plugin (or one of the
    /// package in `--wit`).
    #[arg(long, default_value = "operation")]
    world: String,
    /// A WIT directory whose package holds the world (e.g. one that adds
    /// `wasi:config/store` to husk's `operation`, with husk's contract in
    /// its `deps/`); default: husk's contract.
    #[arg(long)]
    wit: Option<PathBuf>,
    /// The directory to write into (created if missing).
    #[arg(long, short)]
    out: PathBuf,
}

pub(super) fn run(args: SdkArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        SdkCommand::Wit { dir } => {
            sdk::write_wit(&dir)?;
        }
        SdkCommand::CBindings(BindingsArgs { world, wit, out }) => {
            sdk::c_bindings(&world, wit.as_deref(), &out)?;
        }
        SdkCommand::GoBindings(BindingsArgs { world, wit, out }) => {
            sdk::go_bindings(&world, wit.as_deref(), &out)?;
        }
        SdkCommand::Wrap { module, world, output } => {
            let core = std::fs::read(&module).with_context(|| format!("cannot read {}", module.display()))?;
            let component = sdk::wrap(&core, &module.display().to_string(), world.as_deref())?;
            std::fs::write(&output, component).with_context(|| format!("cannot write {}", output.display()))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
