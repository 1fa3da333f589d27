//! # husk-host
//!
//! husk is a WebAssembly plugin host for job-queue worker operations. This
//! crate is the host: the engine, plugins, and the sandbox that runs one job
//! in a fresh, limited instance.
//!
//! ```no_run
//! use husk_host::engine::{Engine, EngineConfig};
//! use husk_host::plugin::{Plugin, World};
//! use husk_host::sandbox::{Job, Limits, Sandbox};
//!
//! # fn main() -> anyhow::Result<()> {
//! let sandbox = Sandbox::new(Engine::new(EngineConfig::default())?)?;
//! let plugin = Plugin::load(&sandbox, "transform.wasm".as_ref(), World::Operation)?;
//! let job = Job { id: "job-1".into(), topic: "greet".into(), attempt: 1, input: br#"{"name":"Ada"}"#.to_vec() };
//! let execution = sandbox.execute(&plugin, &job, &Limits::default(), None)?;
//! println!("{:?} in {:?}", execution.ending(), execution.elapsed);
//! # Ok(())
//! # }
//! ```

pub mod bindings;
pub mod cli;
pub mod engine;
pub mod fault;
pub mod plugin;
pub mod sandbox;
