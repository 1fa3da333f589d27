//! How husk writes what it keeps into JSON (the API, the outcome stream,
//! the SQL stores' rows): byte payloads that are JSON by convention
//! ([`json_bytes`]), and times as milliseconds since the Unix epoch
//! ([`epoch_millis`]).

/// `bytes` as the JSON value that shows them (see [`json_bytes`]): the JSON
/// itself when they are JSON text, `{"base64": "…"}` otherwise; `null` when
/// empty. For display and reports.
pub fn body_value(bytes: &[u8]) -> serde_json::Value {
    // Cannot fail: what is shown as JSON nests at most
    // `json_bytes::MAX_DEPTH` deep, well within serde_json's limit.
    serde_json::to_value(json_bytes::Bytes(bytes)).unwrap_or_else(|_| json_bytes::base64_marker(bytes))
}

/// Serde for byte payloads that are JSON by convention (outputs, fault
/// bodies), byte-exact both ways:
///
/// - empty bytes are `null`;
/// - bytes that are one JSON value, with nothing around it, nested at most
///   [`MAX_DEPTH`](json_bytes::MAX_DEPTH) arrays or objects deep, are
///   embedded as that JSON text, byte for byte (whitespace and key order
///   kept);
/// - anything else — bytes that are not UTF-8 or not JSON, JSON nested
///   deeper, the four bytes `null`, and JSON that reads as the marker itself
///   (an object whose one member is a string named `base64`) — is
///   `{"base64": "<standard base64>"}`.
///
/// So no reader of what husk writes meets JSON nested deeper than
/// `MAX_DEPTH` plus the few levels around it, wherever a guest's output
/// goes: every JSON parser reads it (serde_json stops at 128 levels), and
/// husk's own readers never fail on it.
///
/// Reading takes the JSON text as it is (a raw value): only a deserializer
/// reading JSON text (serde_json's) can read these fields, and not through
/// serde's buffering (an internally tagged or untagged enum, `flatten`).
pub mod json_bytes {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::value::RawValue;

    /// The bytes `bytes`, serialized as this module says.
    pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

    impl Serialize for Bytes<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            serialize(self.0, serializer)
        }
    }

    /// The deepest nesting of arrays and objects shown as JSON; deeper JSON
    /// is shown as base64.
    pub const MAX_DEPTH: usize = 64;

    /// The marker of bytes shown as base64.
    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Base64<T> {
        base64: T,
    }

    /// `bytes` as the JSON text they are, when that text shows them exactly.
    fn as_json(bytes: &[u8]) -> Option<&RawValue> {
        let text = std::str::from_utf8(bytes).ok()?;
        let raw: &RawValue = serde_json::from_str(text).ok()?;
        let exact = raw.get().len() == text.len() && raw.get() != "null" && marker(raw).is_none();
        (exact && within_depth(text)).then_some(raw)
    }

    /// Whether JSON `text` nests at most [`MAX_DEPTH`] deep (read without
    /// recursion, at any depth).
    fn within_depth(text: &str) -> bool {
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        for byte in text.bytes() {
            if in_string {
                match byte {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match byte {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        return false;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        true
    }

    /// `{"base64": "<bytes in standard base64>"}`.
    pub(crate) fn base64_marker(bytes: &[u8]) -> serde_json::Value {
        serde_json::json!({ "base64": STANDARD.encode(bytes) })
    }

    /// The base64 text of a marker.
    fn marker(raw: &RawValue) -> Option<String> {
        raw.get()
            .starts_with('{')
            .then(|| serde_json::from_str::<Base64<String>>(raw.get()).ok())
            .flatten()
            .map(|m| m.base64)
    }

    /// Serializes `bytes`.
    pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        if bytes.is_empty() {
            return serializer.serialize_none();
        }
        match as_json(bytes) {
            Some(raw) => raw.serialize(serializer),
            None => Base64 { base64: STANDARD.encode(bytes) }.serialize(serializer),
        }
    }

    /// Deserializes bytes written by [`serialize`]: `null` is empty, a
    /// `{"base64": …}` marker its decoded bytes, any other value its JSON
    /// text as written.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let Some(raw) = Option::<Box<RawValue>>::deserialize(deserializer)? else { return Ok(Vec::new()) };
        match marker(&raw) {
            Some(text) => STANDARD.decode(text).map_err(|e| D::Error::custom(format!("`base64` bytes: {e}"))),
            None => Ok(raw.get().as_bytes().to_vec()),
        }
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::fault::{Fault, codes};
    use crate::outcome::Outcome;

    /// `bytes` through an outcome and a fault, to JSON text and back.
    fn round_trip(bytes: &[u8]) -> (String, Vec<u8>, Vec<u8>) {
        let outcome = Outcome::Completed { output: bytes.to_vec() };
        let text = serde_json::to_string(&outcome).unwrap();
        let Outcome::Completed { output } = serde_json::from_str(&text).unwrap() else { panic!("{text}") };
        let fault = Outcome::Failed {
            topic: "t".into(),
            attempts: 1,
            last_fault: Fault::new("c", bytes),
            diagnostic: "d".into(),
            plugin_version: None,
        };
        let Outcome::Failed { last_fault, .. } = serde_json::from_str(&serde_json::to_string(&fault).unwrap()).unwrap()
        else {
            panic!()
        };
        (text, output, last_fault.body)
    }

    #[test]
    fn json_is_shown_as_itself_byte_for_byte() {
        for json in [&br#"{"b": 2,  "a": [1, 2.50]}"#[..], b"\"text\"", b"42", b"[]", br#"{"base64":"x","n":1}"#] {
            let (text, output, body) = round_trip(json);
            assert!(text.contains(std::str::from_utf8(json).unwrap()), "{text}");
            assert_eq!((output.as_slice(), body.as_slice()), (json, json));
        }
    }

    #[test]
    fn other_bytes_are_shown_as_base64_and_read_back_exactly() {
        let cases: [(&[u8], &str); 6] = [
            (b"\xff\x00binary", "/wBiaW5hcnk="),
            (b"not json", "bm90IGpzb24="),
            (b"null", "bnVsbA=="),
            (b" 1", "IDE="),
            (b"{\"a\":1}\n", "eyJhIjoxfQo="),
            (br#"{"base64":"aGk="}"#, "eyJiYXNlNjQiOiJhR2s9In0="),
        ];
        for (bytes, base64) in cases {
            assert_eq!(body_value(bytes), json!({ "base64": base64 }));
            let (_, output, body) = round_trip(bytes);
            assert_eq!((output.as_slice(), body.as_slice()), (bytes, bytes));
        }
        assert_eq!(body_value(b""), serde_json::Value::Null);
        assert_eq!(round_trip(b"").1, b"");
    }

    #[test]
    fn json_nested_past_the_limit_is_shown_as_base64_and_nothing_fails_on_it() {
        use base64::Engine as _;
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes();
        let within = nested(json_bytes::MAX_DEPTH);
        assert_eq!(body_value(&within), serde_json::from_slice::<serde_json::Value>(&within).unwrap());
        let (text, _, _) = round_trip(&within);
        assert!(text.contains(std::str::from_utf8(&within).unwrap()), "embedded as itself");
        for depth in [json_bytes::MAX_DEPTH + 1, 128, 1_000, 100_000] {
            let bytes = nested(depth);
            let base64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
            assert_eq!(body_value(&bytes), json!({ "base64": base64 }), "{depth}");
            let (_, output, body) = round_trip(&bytes);
            assert_eq!((output, body), (bytes.clone(), bytes.clone()), "{depth}");
            // A guest's reserved code wraps it; the fault still converts.
            let fault = Fault::from_guest("husk.deep".into(), bytes.clone());
            assert_eq!(fault.code, codes::GUEST_RESERVED_CODE);
            let value = serde_json::to_value(&fault).unwrap();
            assert!(value["body"]["body"]["base64"].is_string(), "{depth}");
        }
        // Brackets inside strings are not nesting.
        let text = format!(r#"{{"a": "{}\"{}"}}"#, "[".repeat(1_000), "{".repeat(1_000));
        assert_eq!(body_value(text.as_bytes())["a"].as_str().map(str::len), Some(2_001));
    }

    #[test]
    fn a_marker_that_is_not_base64_is_refused() {
        let error = serde_json::from_str::<Outcome>(r#"{"kind":"completed","output":{"base64":"%%"}}"#).unwrap_err();
        assert!(error.to_string().contains("base64"), "{error}");
    }

    proptest! {
        #[test]
        fn any_bytes_read_back_exactly(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let (_, output, body) = round_trip(&bytes);
            prop_assert_eq!(&output, &bytes);
            prop_assert_eq!(&body, &bytes);
        }

        #[test]
        fn any_json_text_reads_back_exactly(value in "[ \\[\\]{}\",:0-9a-z.]{0,40}") {
            let (_, output, _) = round_trip(value.as_bytes());
            prop_assert_eq!(output, value.into_bytes());
        }
    }
}
