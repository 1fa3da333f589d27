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
    /// The job trapped: a panic, an `unreachable`, an out-of-bounds access,
    /// or a failure of the host to run it.
    pub const TRAP: &str = "husk.trap";
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
        Self::json(codes::GUEST_RESERVED_CODE, &serde_json::json!({ "code": code, "body": body_value(&body) }))
    }

    /// The body as JSON when it parses as JSON, otherwise as a JSON string
    /// (lossy UTF-8); `null` when empty. For display and reports.
    pub fn body_value(&self) -> serde_json::Value {
        body_value(&self.body)
    }
}

/// `bytes` as JSON when they parse as JSON, otherwise as a JSON string (lossy
/// UTF-8); `null` when empty.
pub fn body_value(bytes: &[u8]) -> serde_json::Value {
    if bytes.is_empty() {
        return serde_json::Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

impl Serialize for Fault {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("Fault", 2)?;
        s.serialize_field("code", &self.code)?;
        s.serialize_field("body", &json_bytes::Bytes(&self.body))?;
        s.end()
    }
}

impl<'de> serde::Deserialize<'de> for Fault {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Raw {
            code: String,
            #[serde(default, with = "json_bytes")]
            body: Vec<u8>,
        }
        let raw = Raw::deserialize(deserializer)?;
        Ok(Self { code: raw.code, body: raw.body })
    }
}

/// Serde for byte payloads that are JSON by convention: JSON bytes are
/// embedded as JSON (byte for byte), other bytes as a JSON string (lossy
/// UTF-8), empty bytes as `null`.
pub mod json_bytes {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::value::RawValue;

    pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

    impl Serialize for Bytes<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serialize(self.0, serializer)
        }
    }

    /// Serializes `bytes`.
    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        if bytes.is_empty() {
            return serializer.serialize_none();
        }
        match std::str::from_utf8(bytes).ok().and_then(|text| serde_json::from_str::<&RawValue>(text).ok()) {
            Some(raw) => raw.serialize(serializer),
            None => serializer.serialize_str(&String::from_utf8_lossy(bytes)),
        }
    }

    /// Deserializes bytes: the value written back as compact JSON; `null`
    /// is empty. (Through a `serde_json::Value`, not a raw value, so that it
    /// also works inside internally tagged enums.)
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(if value.is_null() { Vec::new() } else { value.to_string().into_bytes() })
    }
}

/// Serde for times as milliseconds since the Unix epoch.
pub mod epoch_millis {
    use std::time::{Duration, SystemTime};

    use serde::{Deserialize, Deserializer, Serializer};

    /// Milliseconds since the Unix epoch (0 for earlier times).
    pub fn to_millis(time: SystemTime) -> u64 {
        time.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    }

    /// The time `millis` after the Unix epoch.
    pub fn from_millis(millis: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_millis(millis)
    }

    /// Serializes a time.
    pub fn serialize<S: Serializer>(time: &SystemTime, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(to_millis(*time))
    }

    /// Deserializes a time.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<SystemTime, D::Error> {
        Ok(from_millis(u64::deserialize(deserializer)?))
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
