//! # husk-guest: write husk operations and error mappers in Rust
//!
//! A husk *operation* runs one job of a topic; an *error mapper* tells the
//! host what a failed job's fault means. Write a plain trait impl and export
//! it with one macro; build with `cargo build --target wasm32-wasip2` and the
//! resulting `.wasm` file is a component husk can load.
//!
//! ## A complete operation
//!
//! ```no_run
//! use husk_guest::{Fault, Job, Operation, Output};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize)]
//! struct Order { id: String, amount_cents: u64 }
//!
//! #[derive(Serialize)]
//! struct Receipt { order: String, charged_cents: u64 }
//!
//! struct Charge;
//!
//! impl Operation for Charge {
//!     fn execute(job: Job) -> Result<Output, Fault> {
//!         let order: Order = job.input_json()?;
//!         husk_guest::info!("charging order {} on attempt {}", order.id, job.attempt);
//!         if order.amount_cents == 0 {
//!             return Err(Fault::new("charge.empty", &serde_json::json!({ "order": order.id })));
//!         }
//!         Output::json(&Receipt { order: order.id, charged_cents: order.amount_cents })
//!     }
//! }
//!
//! husk_guest::export_operation!(Charge);
//! ```
//!
//! ## A complete error mapper
//!
//! ```no_run
//! use husk_guest::{Classification, ErrorMapper, Fault};
//!
//! struct Mapper;
//!
//! impl ErrorMapper for Mapper {
//!     fn classify(fault: Fault) -> Classification {
//!         match fault.code.as_str() {
//!             "charge.empty" => Classification::business_error("empty-order", "nothing to charge"),
//!             code if code.starts_with("husk.") => Classification::Technical(code.to_string()),
//!             _ => match fault.body_field("/status") {
//!                 Some(serde_json::Value::String(status)) => Classification::BusinessStatus(status),
//!                 _ => Classification::Technical(format!("unclassified fault {}", fault.code)),
//!             },
//!         }
//!     }
//! }
//!
//! husk_guest::export_error_mapper!(Mapper);
//! ```
//!
//! A component that is both an operation and its own error mapper implements
//! both traits and uses [`export_plugin!`] instead.
//!
//! ## What a guest can and cannot do
//!
//! A guest sees its [`Job`] and the host's log ([`info!`], [`warn!`], ...).
//! It has no file system, environment variables or arguments; it reads
//! config only as its topic grants it ([`config`]) and calls only the hosts
//! its topic allows (`wasi:http`, e.g. with the `wstd` crate). The
//! host kills a job that runs past its deadline, its fuel budget or its memory
//! cap, and reports that as a fault with a reserved `husk.` code.

// The generated bindings name this crate by its public path.
extern crate self as husk_guest;

#[doc(hidden)]
pub mod __bindings {
    /// Bindings of the `operation` world.
    pub mod operation {
        wit_bindgen::generate!({
            path: "../wit",
            world: "operation",
            pub_export_macro: true,
            export_macro_name: "__export_operation",
            default_bindings_module: "husk_guest::__bindings::operation",
            runtime_path: "husk_guest::__bindings::rt",
            generate_all,
        });
    }

    /// Bindings of the `error-mapper` world, sharing the operation's types.
    pub mod error_mapper {
        wit_bindgen::generate!({
            path: "../wit",
            world: "error-mapper",
            pub_export_macro: true,
            export_macro_name: "__export_error_mapper",
            default_bindings_module: "husk_guest::__bindings::error_mapper",
            runtime_path: "husk_guest::__bindings::rt",
            with: {
                "husk:worker/types@0.1.0": super::operation::husk::worker::types,
                "husk:worker/log@0.1.0": super::operation::husk::worker::log,
            },
        });
    }

    /// Bindings of the `plugin` world (operation and error mapper in one).
    pub mod plugin {
        wit_bindgen::generate!({
            path: "../wit",
            world: "plugin",
            pub_export_macro: true,
            export_macro_name: "__export_plugin",
            default_bindings_module: "husk_guest::__bindings::plugin",
            runtime_path: "husk_guest::__bindings::rt",
            with: {
                "husk:worker/types@0.1.0": super::operation::husk::worker::types,
                "husk:worker/log@0.1.0": super::operation::husk::worker::log,
            },
        });
    }

    pub use wit_bindgen::rt;
}

pub mod config;
mod json;
pub mod log;

pub use __bindings::operation::husk::worker::types::{BusinessError, Classification, Fault, Job};
pub use json::{INVALID_INPUT, Output};

/// An operation: the code that runs one job of a topic.
///
/// Return `Ok` with the job's output, or `Err` with a [`Fault`] that the
/// topic's error mapper classifies (a business outcome, or a technical fault
/// the retry policy may retry). Export the implementation with
/// [`export_operation!`].
pub trait Operation {
    /// Run one job.
    fn execute(job: Job) -> Result<Output, Fault>;
}

/// An error mapper: decides what a fault means.
///
/// Runs in the host with a small fuel budget and deadline; keep it a pure,
/// quick function of the fault. Export it with [`export_error_mapper!`].
pub trait ErrorMapper {
    /// Classify one fault.
    fn classify(fault: Fault) -> Classification;
}

/// Exports a type implementing [`Operation`] as the component's `execute`.
///
/// ```ignore
/// husk_guest::export_operation!(MyOperation);
/// ```
#[macro_export]
macro_rules! export_operation {
    ($ty:ident) => {
        impl $crate::__bindings::operation::Guest for $ty {
            fn execute(job: $crate::Job) -> ::core::result::Result<::std::vec::Vec<u8>, $crate::Fault> {
                <$ty as $crate::Operation>::execute(job).map($crate::Output::into_bytes)
            }
        }
        $crate::__export_operation_impl!($ty);
    };
}

/// Exports a type implementing [`ErrorMapper`] as the component's `classify`.
///
/// ```ignore
/// husk_guest::export_error_mapper!(MyMapper);
/// ```
#[macro_export]
macro_rules! export_error_mapper {
    ($ty:ident) => {
        impl $crate::__bindings::error_mapper::Guest for $ty {
            fn classify(fault: $crate::Fault) -> $crate::Classification {
                <$ty as $crate::ErrorMapper>::classify(fault)
            }
        }
        $crate::__export_error_mapper_impl!($ty);
    };
}

/// Exports a type implementing both [`Operation`] and [`ErrorMapper`]: the
/// component is a topic's operation and its own error mapper.
///
/// ```ignore
/// husk_guest::export_plugin!(MyPlugin);
/// ```
#[macro_export]
macro_rules! export_plugin {
    ($ty:ident) => {
        impl $crate::__bindings::plugin::Guest for $ty {
            fn execute(job: $crate::Job) -> ::core::result::Result<::std::vec::Vec<u8>, $crate::Fault> {
                <$ty as $crate::Operation>::execute(job).map($crate::Output::into_bytes)
            }
            fn classify(fault: $crate::Fault) -> $crate::Classification {
                <$ty as $crate::ErrorMapper>::classify(fault)
            }
        }
        $crate::__export_plugin_impl!($ty);
    };
}
