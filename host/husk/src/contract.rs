//! The types of the WIT contract (`husk:worker@0.1.0`, `wit/worker.wit`) as
//! the host sees them: a [`Job`] handed to an operation, and what an error
//! mapper returns ([`Classification`], its [`BusinessError`]), which
//! [`crate::classify::Classification`] turns into the host's own.

pub use crate::bindings::{BusinessError, Classification, Job, LogLevel};
