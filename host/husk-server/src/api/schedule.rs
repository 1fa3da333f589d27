//! When a new job may first run (`run_at` or `delay`) and its priority, on
//! a single enqueue (query parameters) and on each job of a batch.

use std::time::{Duration, SystemTime};

use serde::Deserialize;
use utoipa::IntoParams;

use husk::store::PRIORITIES;

use super::ApiError;
use super::jobs::parse_time;

/// The latest start a job may be given: the end of year 9999, the last
/// time RFC 3339 can write.
const LATEST: Duration = Duration::from_secs(253_402_300_799);

/// The form of a `delay`, in the contract: numbers of milliseconds,
/// seconds, minutes, hours, days or weeks (`90s`, `1h 30m`); what
/// [`parse_delay`] takes, no more. (utoipa's attributes take a literal: a
/// test checks the document says this.)
#[cfg(test)]
pub(super) const DELAY_PATTERN: &str = r"^([0-9]{1,5} ?(ms|s|m|h|d|w) ?)+$";

/// A `delay` of [`DELAY_PATTERN`]'s form; `None` for anything else.
fn parse_delay(text: &str) -> Option<Duration> {
    let mut rest = text;
    let mut total = Duration::ZERO;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if !(1..=5).contains(&digits) {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = rest[digits..].strip_prefix(' ').unwrap_or(&rest[digits..]);
        let (unit, seconds) = [("ms", 0), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400), ("w", 604_800)]
            .into_iter()
            .find(|(unit, _)| rest.starts_with(unit))?;
        total += if seconds == 0 { Duration::from_millis(n) } else { Duration::from_secs(n * seconds) };
        rest = &rest[unit.len()..];
        rest = rest.strip_prefix(' ').unwrap_or(rest);
    }
    (!text.is_empty()).then_some(total)
}

/// Query of a single enqueue: when the job may first run, and its priority.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct EnqueueQuery {
    /// Not before this time: RFC 3339 (`2026-12-03T08:30:00Z`, an offset,
    /// or no zone for UTC); a time already past runs at once.
    #[param(format = DateTime, example = "2026-12-03T08:30:00Z")]
    pub(super) run_at: Option<String>,
    /// Not before this long from now (`10s`, `5m`, `1h 30m`); not with
    /// `run_at`.
    #[param(pattern = r"^([0-9]{1,5} ?(ms|s|m|h|d|w) ?)+$", example = "1h 30m")]
    pub(super) delay: Option<String>,
    /// Its priority within the topic, -100 to 100 (default 0): of the jobs
    /// ready to run, the highest priority's run first, each priority's
    /// oldest first.
    #[param(minimum = -100, maximum = 100)]
    pub(super) priority: Option<i64>,
}

/// A job's priority given as `priority` (`what` names it in a refusal);
/// 0 when not given.
///
/// # Errors
///
/// `bad-request` for one outside [`PRIORITIES`].
pub(super) fn priority_of(priority: Option<i64>, what: &str) -> Result<i16, ApiError> {
    let (low, high) = (*PRIORITIES.start(), *PRIORITIES.end());
    match priority {
        None => Ok(0),
        Some(p) => i16::try_from(p)
            .ok()
            .filter(|p| PRIORITIES.contains(p))
            .ok_or_else(|| ApiError::bad_request(format!("{what}: priority: {low} to {high}, not {p}"))),
    }
}

/// The time a job given `run_at` or `delay` (`what` names it in a
/// refusal) may first run; `None`: at once (also for a time already past).
///
/// # Errors
///
/// `bad-request`: both given, an unparsable time or duration, or a start
/// past [`LATEST`].
pub(super) fn start_of(
    run_at: Option<&str>,
    delay: Option<&str>,
    now: SystemTime,
    what: &str,
) -> Result<Option<SystemTime>, ApiError> {
    let at = match (run_at, delay) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => return Err(ApiError::bad_request(format!("{what}: `run_at` or `delay`, not both"))),
        (Some(text), None) => parse_time(text).map_err(|e| ApiError::bad_request(format!("{what}: run_at: {e}")))?,
        (None, Some(text)) => {
            let delay = parse_delay(text).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "{what}: delay: `{text}` is not a duration like 90s or 1h 30m (ms, s, m, h, d, w)"
                ))
            })?;
            now + delay
        }
    };
    if at.duration_since(SystemTime::UNIX_EPOCH).is_ok_and(|since| since > LATEST) {
        return Err(ApiError::bad_request(format!("{what}: a start after the year 9999")));
    }
    Ok(Some(at).filter(|at| *at > now))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_gives_delay_the_form_the_server_takes() {
        let document = crate::api::contract::json(&crate::api::contract::document()).to_string();
        let pattern = serde_json::to_string(DELAY_PATTERN).unwrap();
        assert_eq!(document.matches(&pattern).count(), 2, "the query parameter and the batch field");
    }

    #[test]
    fn a_priority_is_within_its_range() {
        assert_eq!(priority_of(None, "job").unwrap(), 0);
        assert_eq!((priority_of(Some(-100), "job").unwrap(), priority_of(Some(100), "job").unwrap()), (-100, 100));
        for bad in [101, -101, 70_000, i64::MIN] {
            assert!(priority_of(Some(bad), "job 2").unwrap_err().message.contains("job 2: priority"), "{bad}");
        }
    }

    #[test]
    fn a_start_is_a_time_or_a_delay_and_bad_ones_are_refused() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        assert_eq!(start_of(None, None, now, "job").unwrap(), None);
        assert_eq!(start_of(None, Some("90s"), now, "job").unwrap(), Some(now + Duration::from_secs(90)));
        let long = Some(now + Duration::from_secs(2 * 604_800 + 3600 + 1800) + Duration::from_millis(5));
        assert_eq!(start_of(None, Some("2w 1h30m 5ms"), now, "job").unwrap(), long);
        assert_eq!(start_of(None, Some("0s"), now, "job").unwrap(), None, "now: at once");
        assert_eq!(start_of(Some("1969-01-01T00:00:00Z"), None, now, "job").unwrap(), None, "past: at once");
        let at = humantime::parse_rfc3339("2027-01-02T03:04:05Z").unwrap();
        assert_eq!(start_of(Some("2027-01-02T03:04:05Z"), None, now, "job").unwrap(), Some(at));
        assert_eq!(start_of(Some("2027-01-02T04:04:05+01:00"), None, now, "job").unwrap(), Some(at));
        for (run_at, delay) in [
            (Some("tomorrow"), None),
            (None, Some("-5s")),
            (None, Some("soon")),
            (None, Some("0")),
            (None, Some("")),
            (None, Some("5")),
            (None, Some("5 minutes")),
            (None, Some("123456s")),
            (None, Some("1s  2s")),
            (Some("2027-01-02T03:04:05Z"), Some("1s")),
        ] {
            let refused = start_of(run_at, delay, now, "job 3").unwrap_err();
            assert!(refused.message.contains("job 3"), "{run_at:?} {delay:?}: {refused:?}");
        }
    }
}
