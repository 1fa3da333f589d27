//! Host-side bindings of the WIT contract in `wit/`: the one place that runs
//! `bindgen!`.

/// Bindings of the `operation` world; the `types` and `log` interfaces live
/// here and are shared with the other world.
#[allow(missing_docs, unreachable_pub)]
pub mod operation {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "operation",
        additional_derives: [PartialEq, Eq],
    });
}

/// Bindings of the `error-mapper` world.
#[allow(missing_docs, unreachable_pub)]
pub mod error_mapper {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "error-mapper",
        with: {
            "husk:worker/types": super::operation::husk::worker::types,
            "husk:worker/log": super::operation::husk::worker::log,
        },
    });
}

pub use operation::husk::worker::log::Level as LogLevel;
pub use operation::husk::worker::types::{BusinessError, Classification, Job};
