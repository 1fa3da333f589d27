//! # husk-host
//!
//! husk is a WebAssembly plugin host for job-queue worker operations. This
//! crate is the host: the engine, plugins, the sandbox that runs one job in
//! a fresh, limited instance, and the dispatcher that classifies faults,
//! retries technical ones by re-arming the job, and delivers only terminal
//! outcomes.
//!
//! ## Embedding
//!
//! An engine builds a [`Host`], registers topics, enqueues jobs and receives
//! terminal outcomes through its own [`outcome::OutcomeSink`]. This is the
//! runnable example `cargo run --example embed`:
//!
//! ```no_run
#![doc = include_str!("../examples/embed.rs")]
//! ```
//!
//! ## One job in the sandbox
//!
//! ```no_run
//! use husk_host::engine::{Engine, EngineConfig};
//! use husk_host::plugin::{Plugin, World};
//! use husk_host::sandbox::{Job, Limits, Sandbox};
//!
//! # fn main() -> anyhow::Result<()> {
//! let sandbox = Sandbox::new(Engine::new(EngineConfig::default())?)?;
//! let plugin = sandbox.load("transform.wasm".as_ref(), World::Operation)?;
//! let job = Job { id: "job-1".into(), topic: "greet".into(), attempt: 1, input: br#"{"name":"Ada"}"#.to_vec() };
//! let execution = sandbox.execute(&plugin, &job, &Limits::default(), None)?;
//! println!("{:?} in {:?}", execution.ending(), execution.elapsed);
//! # Ok(())
//! # }
//! ```

pub mod api;
pub mod bindings;
pub mod classify;
pub mod cli;
pub mod client;
pub mod clock;
pub mod config;
pub mod demo;
pub mod dispatch;
pub mod engine;
pub mod fault;
mod guest;
pub mod host;
pub mod job;
pub mod linker;
pub mod metrics;
pub mod outcome;
pub mod plugin;
pub mod quota;
pub mod retry;
pub mod sandbox;
pub mod scaffold;
pub mod sdk;
pub mod serve;
pub mod store;
pub mod tokens;
pub mod versions;
pub mod worker;

pub use host::{Host, HostBuilder, HostError, MapperSpec, OperatorFile, PluginSource, Topic};
