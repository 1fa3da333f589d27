//! Redaction: a topic's secrets replaced by `***` in what its guests return
//! and log, before husk encodes, splits or stores any of it.
//!
//! A guard against a guest showing a secret by accident, not against one
//! that encodes it on purpose (base64, reversed, one character a line):
//! a guest that can read a secret can always do that. Covered are the forms
//! a secret takes without the guest meaning it to:
//!
//! - the secret's own bytes, wherever they are, also across the writes of a
//!   stream and its line breaks (a multi-line key);
//! - the secret inside a JSON string, however the guest's JSON library
//!   escaped it (`\"`, `\\`, `\n`, `\u00e4`, `\/`, surrogate pairs): each
//!   string with escapes is read as JSON reads it.
//!
//! Where occurrences of secrets overlap, every byte of each is hidden: the
//! union of their ranges becomes one `***`.

use std::ops::Range;
use std::sync::Arc;

use aho_corasick::AhoCorasick;

/// What replaces a secret.
const MASK: &[u8] = b"***";

/// Replaces secrets with `***`. `Redactor::default()` replaces nothing.
#[derive(Debug, Clone, Default)]
pub struct Redactor(Option<Arc<Patterns>>);

#[derive(Debug)]
struct Patterns {
    /// Every secret, and its JSON-escaped form where that differs.
    matcher: AhoCorasick,
    /// The longest pattern's length: what a stream holds back.
    longest: usize,
}

impl Redactor {
    /// A redactor of `secrets` (empty ones are ignored).
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a str>) -> Self {
        let mut patterns: Vec<String> = Vec::new();
        for secret in secrets.into_iter().filter(|s| !s.is_empty()) {
            let escaped = serde_json::to_string(secret).expect("a string serializes");
            let escaped = &escaped[1..escaped.len() - 1];
            if escaped != secret {
                patterns.push(escaped.to_owned());
            }
            patterns.push(secret.to_owned());
        }
        if patterns.is_empty() {
            return Self(None);
        }
        let longest = patterns.iter().map(String::len).max().unwrap_or(0);
        let matcher = AhoCorasick::new(&patterns).expect("a few secrets build a matcher");
        Self(Some(Arc::new(Patterns { matcher, longest })))
    }

    /// Whether there is anything to replace.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// `text` with every secret replaced by `***`.
    pub fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if self.is_empty() {
            return text.into();
        }
        let bytes = self.redact_bytes(text.as_bytes().to_vec());
        if bytes == text.as_bytes() {
            return text.into();
        }
        // Whole secrets (UTF-8 text) and whole JSON escapes were replaced:
        // the text is still UTF-8.
        String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()).into()
    }

    /// `bytes` with every secret replaced by `***`: its bytes as they are,
    /// and inside any JSON string with escapes.
    pub fn redact_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        let Some(patterns) = &self.0 else { return bytes };
        let bytes = replace(&bytes, &patterns.raw_spans(&bytes)).unwrap_or(bytes);
        let escaped = patterns.escaped_spans(&bytes);
        replace(&bytes, &escaped).unwrap_or(bytes)
    }

    /// A redacting stream: the written bytes come out with secrets replaced,
    /// also where a secret spans two writes.
    pub(crate) fn stream(&self) -> RedactingStream {
        RedactingStream { redactor: self.clone(), held: Vec::new(), masked: 0 }
    }
}

impl Patterns {
    /// The ranges of `bytes` that are some secret, overlapping ones merged.
    fn raw_spans(&self, bytes: &[u8]) -> Vec<Range<usize>> {
        merged(self.matcher.find_overlapping_iter(bytes).map(|m| m.range()).collect())
    }

    /// The ranges of `bytes` that spell a secret inside a JSON string with
    /// escapes, as JSON reads the string.
    fn escaped_spans(&self, bytes: &[u8]) -> Vec<Range<usize>> {
        let mut spans = Vec::new();
        let mut at = 0;
        while let Some(open) = bytes[at..].iter().position(|&b| b == b'"') {
            let start = at + open + 1;
            let (mut end, mut escapes) = (start, false);
            while end < bytes.len() && bytes[end] != b'"' {
                escapes |= bytes[end] == b'\\';
                end += if bytes[end] == b'\\' { 2 } else { 1 };
            }
            if end >= bytes.len() {
                break;
            }
            if escapes {
                let decoded = Decoded::of(&bytes[start..end]);
                spans.extend(
                    self.raw_spans(&decoded.bytes)
                        .into_iter()
                        .map(|r| start + decoded.from[r.start].start..start + decoded.from[r.end - 1].end),
                );
            }
            at = end + 1;
        }
        merged(spans)
    }
}

/// A JSON string's contents read as JSON reads them, each byte with the
/// range of the source it came from.
struct Decoded {
    bytes: Vec<u8>,
    from: Vec<Range<usize>>,
}

impl Decoded {
    fn of(raw: &[u8]) -> Self {
        let mut decoded = Self { bytes: Vec::with_capacity(raw.len()), from: Vec::with_capacity(raw.len()) };
        let mut i = 0;
        while i < raw.len() {
            let (text, len) = escape(&raw[i..]);
            let mut utf8 = [0; 4];
            let bytes = match text {
                Some(c) => c.encode_utf8(&mut utf8).as_bytes(),
                None => &raw[i..=i],
            };
            for &b in bytes {
                decoded.bytes.push(b);
                decoded.from.push(i..i + len);
            }
            i += len;
        }
        decoded
    }
}

/// The character the escape at the start of `raw` stands for, and the
/// escape's length; `None` and 1 for a byte that starts no escape.
fn escape(raw: &[u8]) -> (Option<char>, usize) {
    let simple = match raw {
        [b'\\', b'"', ..] => '"',
        [b'\\', b'\\', ..] => '\\',
        [b'\\', b'/', ..] => '/',
        [b'\\', b'b', ..] => '\u{8}',
        [b'\\', b'f', ..] => '\u{c}',
        [b'\\', b'n', ..] => '\n',
        [b'\\', b'r', ..] => '\r',
        [b'\\', b't', ..] => '\t',
        [b'\\', b'u', ..] => {
            let Some(unit) = hex4(&raw[2..]) else { return (None, 1) };
            if (0xd800..0xdc00).contains(&unit)
                && let [b'\\', b'u', rest @ ..] = &raw[6..]
                && let Some(low) = hex4(rest).filter(|low| (0xdc00..0xe000).contains(low))
            {
                let c = char::from_u32(0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00));
                return (c, 12);
            }
            return (Some(char::from_u32(unit).unwrap_or(char::REPLACEMENT_CHARACTER)), 6);
        }
        _ => return (None, 1),
    };
    (Some(simple), 2)
}

/// The four hex digits at the start of `raw`.
fn hex4(raw: &[u8]) -> Option<u32> {
    let digits = std::str::from_utf8(raw.get(..4)?).ok()?;
    u32::from_str_radix(digits, 16).ok().filter(|_| digits.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `ranges` in order, overlapping ones merged.
fn merged(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.sort_unstable_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::new();
    for range in ranges {
        match out.last_mut() {
            Some(last) if range.start < last.end => last.end = last.end.max(range.end),
            _ => out.push(range),
        }
    }
    out
}

/// `bytes` with each of `spans` (in order, disjoint) replaced by `***`;
/// `None` when there are none.
fn replace(bytes: &[u8], spans: &[Range<usize>]) -> Option<Vec<u8>> {
    if spans.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for span in spans {
        out.extend_from_slice(&bytes[at..span.start]);
        out.extend_from_slice(MASK);
        at = span.end;
    }
    out.extend_from_slice(&bytes[at..]);
    Some(out)
}

/// Redacts a stream written in pieces: what it gives out has every secret
/// replaced, wherever the writes were cut. It holds back the last bytes
/// written (fewer than the longest secret) until it knows whether they start
/// a secret, or until [`RedactingStream::finish`].
pub(crate) struct RedactingStream {
    redactor: Redactor,
    held: Vec<u8>,
    /// How many of the held bytes continue a secret whose start was given
    /// out (as `***`) already.
    masked: usize,
}

impl RedactingStream {
    /// Takes `bytes`; appends to `out` what can be given out now.
    pub(crate) fn write(&mut self, bytes: &[u8], out: &mut Vec<u8>) {
        let Some(patterns) = &self.redactor.0 else {
            out.extend_from_slice(bytes);
            return;
        };
        self.held.extend_from_slice(bytes);
        // A secret that starts before `cut` ends inside what is held.
        let cut = (self.held.len() + 1).saturating_sub(patterns.longest);
        self.give_out(cut, out);
    }

    /// Gives out what is held.
    pub(crate) fn finish(&mut self, out: &mut Vec<u8>) {
        self.give_out(self.held.len(), out);
    }

    /// Gives out the first `cut` held bytes, secrets replaced; a secret
    /// across the cut is given out as `***` now and its rest hidden later.
    fn give_out(&mut self, cut: usize, out: &mut Vec<u8>) {
        let Some(patterns) = &self.redactor.0 else { return };
        let carried = (self.masked > 0).then_some(0..self.masked);
        let spans = merged(carried.into_iter().chain(patterns.raw_spans(&self.held)).collect());
        let (mut at, mut masked) = (0, 0);
        for span in spans.iter().take_while(|span| span.start < cut) {
            out.extend_from_slice(&self.held[at..span.start]);
            if !(span.start == 0 && self.masked > 0) {
                out.extend_from_slice(MASK);
            }
            at = span.end.min(cut);
            masked = span.end - at;
        }
        out.extend_from_slice(&self.held[at..cut]);
        self.held.drain(..cut);
        self.masked = masked;
    }
}

#[cfg(test)]
mod tests {
    use super::Redactor;

    fn redact(secrets: &[&str], text: &str) -> String {
        Redactor::new(secrets.iter().copied()).redact(text).into_owned()
    }

    #[test]
    fn every_occurrence_is_replaced_and_overlapping_ones_whole() {
        assert_eq!(redact(&["abcdef", "abc"], "abcdef abc xabcx"), "*** *** x***x");
        assert_eq!(redact(&["abc", "bcdef"], "abcdefg"), "***g", "no byte of either is shown");
        let redactor = Redactor::new(["abc", "abcdef"]);
        assert_eq!(redactor.redact_bytes(b"\xffabc\x00abcdef".to_vec()), b"\xff***\x00***".to_vec());
        assert!(Redactor::default().is_empty() && Redactor::new([""]).is_empty());
        assert_eq!(Redactor::default().redact("abc"), "abc");
    }

    #[test]
    fn a_secret_inside_a_json_string_is_replaced_however_it_was_escaped() {
        let secret = "pa\"ss\\wörd/\n😀-42";
        let redactor = Redactor::new([secret]);
        let serde = serde_json::json!({ "v": secret, "w": "kept \"as\" is" }).to_string();
        assert_eq!(redactor.redact(&serde), r#"{"v":"***","w":"kept \"as\" is"}"#);
        // Python's json.dumps (ASCII only), PHP's (`\/`), Go's (HTML-safe).
        let forms = [
            r#""pa\"ss\\w\u00f6rd/\n\ud83d\ude00-42""#,
            r#""pa\u0022ss\u005cwörd\/\u000a😀-42""#,
            r#""x pa\"ss\\wörd\/\n😀-42 y""#,
        ];
        for form in forms {
            let redacted = redactor.redact(form);
            assert!(redacted == r#""***""# || redacted == r#""x *** y""#, "{form}: {redacted}");
        }
        // A string without the secret keeps its escapes byte for byte.
        assert_eq!(redactor.redact(r#"["a\u0041\"", "pa\"ss"]"#), r#"["a\u0041\"", "pa\"ss"]"#);
        // The escaped form JSON writes is found anywhere, as the secret is.
        assert_eq!(redactor.redact("\"pa\\\"ss\\\\wörd/\\n😀-42"), "\"***");
        // Not JSON at all: an unclosed string, a lone escape.
        assert_eq!(redactor.redact(r#""pa\u0022ss\\wörd/\n😀-42"#), r#""pa\u0022ss\\wörd/\n😀-42"#);
        assert_eq!(redactor.redact("\"\\u12\""), "\"\\u12\"");
    }

    #[test]
    fn a_stream_hides_a_secret_cut_anywhere() {
        let secret = "-----BEGIN KEY-----\nMIIEvQIBADANBg\n-----END KEY-----";
        let redactor = Redactor::new([secret, "short"]);
        let text = format!("a {secret} b short c {secret}");
        for piece in 1..=text.len() {
            let mut stream = redactor.stream();
            let mut out = Vec::new();
            for chunk in text.as_bytes().chunks(piece) {
                stream.write(chunk, &mut out);
                assert!(out.len() <= text.len(), "gives out no more than it took");
            }
            stream.finish(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), "a *** b *** c ***", "written {piece} bytes at a time");
        }
        let mut stream = Redactor::default().stream();
        let mut out = Vec::new();
        stream.write(b"as is", &mut out);
        assert_eq!(out, b"as is", "nothing held without secrets");
    }

    #[test]
    fn a_stream_gives_out_all_but_what_may_start_a_secret() {
        let mut stream = Redactor::new(["secret"]).stream();
        let mut out = Vec::new();
        stream.write(b"0123456789sec", &mut out);
        assert_eq!(out, b"01234567", "holds the five bytes a secret may start in");
        stream.write(b"ond", &mut out);
        assert_eq!(out, b"0123456789s", "`second` is none");
        stream.write(b" secret", &mut out);
        assert_eq!(out, b"0123456789second ***");
        stream.finish(&mut out);
        assert_eq!(out, b"0123456789second ***");
        // Secrets that overlap across a cut: the part given out later is
        // hidden too, and one `***` stands for the whole.
        let mut stream = Redactor::new(["xyz", "zw-long"]).stream();
        let mut out = Vec::new();
        for chunk in [&b"00xy"[..], b"z", b"w-lo", b"ng 1"] {
            stream.write(chunk, &mut out);
        }
        stream.finish(&mut out);
        assert_eq!(out, b"00*** 1");
    }
}
