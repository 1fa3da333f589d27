//! Raw faults: the `<code, body>` a failed job reports before classification.

use serde::Serialize;

/// Reserved fault codes: endings the guest did not choose, produced by the
/// host. They go through a topic's error mapper like any other fault.
pub mod codes {
    /// The job ran past its epoch deadline and was killed.
    pub const TIMEOUT: &str = "husk.timeout";
    /// The job consumed its whole fuel budget and was killed.
    pub const OUT_OF_FUEL: &str = "husk.out-of-fuel";
    /// The job tried to grow its memory past its cap and was killed.
    pub const MEMORY_LIMIT: &str = "husk.memory-limit";
    /// The job exhausted the WebAssembly call stack.
    pub const STACK_OVERFLOW: &str = "husk.stack-overflow";
    /// The job trapped: a panic, an `unreachable`, an out-of-bounds access.
    pub const TRAP: &str = "husk.trap";
    /// The host failed to run the job (it could not start a sandbox, or
    /// husk's own code panicked): never the guest's doing.
    pub const HOST_ERROR: &str = "husk.host-error";
    /// The job returned an output (or fault body) larger than the host accepts.
    pub const OUTPUT_TOO_LARGE: &str = "husk.output-too-large";
    /// The worker holding the job's lock did not report before the lock
    /// expired (it crashed or hung); counts as an attempt.
    pub const LOCK_EXPIRED: &str = "husk.lock-expired";

    /// What a guest's own fault with a reserved code becomes: a guest may
    /// not pose as the host. Its body is `{"code": <the guest's code>,
    /// "body": <the guest's body>}` (see [`super::Fault::from_guest`]).
    pub const GUEST_RESERVED_CODE: &str = "guest.reserved-code";

    /// Whether `code` is in the namespace reserved for the host.
    pub fn is_reserved(code: &str) -> bool {
        code.starts_with("husk.")
    }
}

/// A raw fault: what went wrong with one attempt of a job, before an error
/// mapper classifies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Machine-readable code, e.g. `payment.declined` or [`codes::TIMEOUT`].
    pub code: String,
    /// Details, by convention UTF-8 JSON; may be empty.
    pub body: Vec<u8>,
}

impl Fault {
    /// A fault with `code` and raw `body` bytes.
    pub fn new(code: impl Into<String>, body: impl Into<Vec<u8>>) -> Self {
        Self { code: code.into(), body: body.into() }
    }

    /// A fault with `code` and `body` serialized as JSON.
    pub fn json(code: impl Into<String>, body: &serde_json::Value) -> Self {
        Self::new(code, body.to_string())
    }

    /// A fault a guest returned. The `husk.` namespace is the host's: a
    /// guest's code in it ([`codes::is_reserved`]) is replaced by
    /// [`codes::GUEST_RESERVED_CODE`], the guest's code and body kept inside
    /// the new body, so no mapper, policy, metric or reader of the outcome
    /// can take it for a fault the host raised (a kill, a lock expiry).
    pub fn from_guest(code: String, body: Vec<u8>) -> Self {
        if !codes::is_reserved(&code) {
            return Self { code, body };
        }
        Self::json(
            codes::GUEST_RESERVED_CODE,
            &serde_json::json!({ "code": code, "body": crate::wire::body_value(&body) }),
        )
    }

    /// The body as JSON when it parses as JSON, otherwise as a JSON string
    /// (lossy UTF-8); `null` when empty. For display and reports.
    pub fn body_value(&self) -> serde_json::Value {
        crate::wire::body_value(&self.body)
    }
}

impl Serialize for Fault {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Fault", 2)?;
        s.serialize_field("code", &self.code)?;
        s.serialize_field("body", &crate::wire::json_bytes::Bytes(&self.body))?;
        s.end()
    }
}

impl<'de> serde::Deserialize<'de> for Fault {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Raw {
            code: String,
            #[serde(default, with = "crate::wire::json_bytes")]
            body: Vec<u8>,
        }
        let raw = Raw::deserialize(deserializer)?;
        Ok(Self { code: raw.code, body: raw.body })
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.code)?;
        if !self.body.is_empty() {
            write!(f, ": {}", self.body_value())?;
        }
        Ok(())
    }
}
