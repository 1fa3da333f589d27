//! # husk-cli
//!
//! The `husk` command: `husk run` (one job in the sandbox), `husk compile`,
//! `husk serve` (see `husk-server`), the remote commands that talk to a
//! server's API, `husk demo`, `husk new` (guest project templates) and
//! `husk sdk` (the WIT, C bindings, core module → component).

pub mod cli;
pub mod client;
pub mod demo;
pub mod demo_service;
pub mod scaffold;
pub mod sdk;
