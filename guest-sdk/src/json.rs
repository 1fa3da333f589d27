//! JSON helpers on the contract's types.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{BusinessError, Classification, Fault, Job};

/// Fault code a guest returns when a job's input is not the JSON it expects.
pub const INVALID_INPUT: &str = "invalid-input";

/// The output of a successful job: bytes, by convention UTF-8 JSON.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Output(Vec<u8>);

impl Output {
    /// Output made of raw bytes.
    pub fn bytes(bytes: impl Into<Vec<u8>>) -> Self {
        Self(bytes.into())
    }

    /// Output made of `value` serialized as JSON.
    ///
    /// # Errors
    ///
    /// A fault with code `output.serialize` when `value` cannot be written as
    /// JSON (e.g. a map with non-string keys).
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Result<Self, Fault> {
        serde_json::to_vec(value)
            .map(Self)
            .map_err(|e| Fault::new("output.serialize", &serde_json::json!({ "error": e.to_string() })))
    }

    /// The output's bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }
}

impl Job {
    /// Parses the job's input as JSON into `T`.
    ///
    /// # Errors
    ///
    /// A fault with code [`INVALID_INPUT`] whose body says what was wrong, so
    /// that `?` hands it straight back to the host.
    pub fn input_json<T: DeserializeOwned>(&self) -> Result<T, Fault> {
        serde_json::from_slice(&self.input)
            .map_err(|e| Fault::new(INVALID_INPUT, &serde_json::json!({ "error": e.to_string() })))
    }
}

impl Fault {
    /// A fault with `code` and `body` serialized as JSON.
    ///
    /// A body that cannot be serialized is replaced by a JSON string saying so.
    pub fn new<B: Serialize + ?Sized>(code: impl Into<String>, body: &B) -> Self {
        let body = serde_json::to_vec(body)
            .unwrap_or_else(|e| serde_json::to_vec(&format!("unserializable body: {e}")).unwrap_or_default());
        Self { code: code.into(), body }
    }

    /// A fault with `code` and an empty body.
    pub fn bare(code: impl Into<String>) -> Self {
        Self { code: code.into(), body: Vec::new() }
    }

    /// Parses the fault's body as JSON into `T`; `None` if it is not.
    pub fn body_json<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The value at a JSON pointer (RFC 6901, e.g. `/error/status`) in the
    /// fault's body; `None` if the body is not JSON or has no such field.
    pub fn body_field(&self, pointer: &str) -> Option<serde_json::Value> {
        self.body_json::<serde_json::Value>()?.pointer(pointer).cloned()
    }
}

impl Classification {
    /// A business error with `code` and `message`.
    pub fn business_error(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self::BusinessError(BusinessError { code: code.into(), message: message.into() })
    }
}
