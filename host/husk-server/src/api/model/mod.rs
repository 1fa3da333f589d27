//! What the API says, in one vocabulary: the JSON bodies of `/v1`, each a
//! type the OpenAPI document ([`super::document`]) is generated from.
//!
//! These are views, not the store's records: times are RFC 3339 in UTC
//! (what the filters take), a job's state is named for people (`queued`,
//! `scheduled`, `retrying`, `running`, then how it ended), and an outcome is
//! one flat object.

mod answers;
mod job;
mod topics;

use std::time::SystemTime;

pub use answers::*;
pub use job::*;
pub use topics::*;

/// A time as the API writes it: RFC 3339 in UTC, to the millisecond (one
/// before 1970, which no stored time is, as 1970's first instant).
pub(crate) fn time(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at.max(SystemTime::UNIX_EPOCH)).to_string()
}
