//! # husk
//!
//! husk is a WebAssembly plugin host for job-queue worker operations. This
//! crate is the library an engine embeds: the engine, plugins, the sandbox
//! that runs one job in a fresh, limited instance, the dispatcher that
//! classifies faults, retries technical ones by re-arming the job and
//! delivers only terminal outcomes, worker pools, quotas, the [`store`]
//! interface and an in-memory store. The SQL stores are the crates
//! `husk-sqlite` and `husk-postgres`; the server (`husk.toml`, the HTTP API)
//! is `husk-server`.
//!
//! ## Embedding
//!
//! An engine builds a [`Host`], registers topics, enqueues jobs and receives
//! terminal outcomes through its own [`outcome::OutcomeSink`]. This is the
//! runnable example `cargo run -p husk --example embed`:
//!
//! ```no_run
#![doc = include_str!("../examples/embed.rs")]
//! ```
//!
//! The [`Host`] offers what an operator's tools need (`husk-server` uses
//! nothing else): enqueue, a job and the job list, incidents and their
//! retry or discard, cancel, the outcome log, deploy and rollback, pause and
//! resume.
//!
//! ## A store of your own
//!
//! A store implements [`store::JobStore`], the queue: enqueue, fetch and
//! lock (reclaiming expired locks), report, cancel, read a job and the
//! outcome log. That is enough to run jobs. What more it offers — listing,
//! incidents, pauses, pruning, kept plugin versions, sharing by several
//! processes — is a trait each ([`store::supports`]), named in
//! [`store::JobStore::supports`]; the host does without what a store lacks
//! and answers [`store::StoreError::Unsupported`] where it is asked for.
//! The conformance suite (feature `conformance`, `husk::store_conformance!`)
//! checks the queue first, then each capability the store names.
//!
//! ## One job in the sandbox
//!
//! ```no_run
//! use husk::engine::{Engine, EngineConfig};
//! use husk::plugin::World;
//! use husk::sandbox::{Job, Limits, Sandbox};
//!
//! # fn main() -> anyhow::Result<()> {
//! let sandbox = Sandbox::new(Engine::new(EngineConfig::default())?)?;
//! let plugin = sandbox.load("transform.wasm".as_ref(), World::Operation)?;
//! let job = Job { id: "job-1".into(), topic: "greet".into(), attempt: 1, input: br#"{"name":"Ada"}"#.to_vec() };
//! let execution = sandbox.execute(&plugin, &job, &Limits::default(), None)?;
//! println!("{:?} in {:?}", execution.ending, execution.elapsed);
//! # Ok(())
//! # }
//! ```

mod bindings;
pub mod capability;
pub mod classify;
pub mod clock;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod contract;
pub mod dispatch;
pub mod engine;
pub mod fault;
mod guest;
pub mod host;
pub mod job;
mod linker;
pub mod notify;
pub mod outcome;
pub mod periodic;
pub mod permanent;
pub mod plugin;
pub mod quota;
pub mod retry;
pub mod sandbox;
pub mod store;
pub mod versions;
pub mod wire;
pub mod worker;

pub use dispatch::{Enqueue, EnqueueJob};
pub use host::{Host, HostBuilder, HostError, MapperSpec, OperatorFile, PluginSource, Topic};
