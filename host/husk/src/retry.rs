//! Retry policies: whether a technical fault is retried, and after what
//! backoff. A retry is a re-arm of the job (a `not_before` gate), never a
//! sleep.
//!
//! Policies are plain serde data ([`RetryPolicySpec`]) so that the store can
//! keep the policy resolved at enqueue with the job.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Decides whether a technical fault is retried.
pub trait RetryPolicy {
    /// `attempt` is the 1-based number of the attempt that just failed with
    /// `cause` (a technical diagnostic). `Some(backoff)`: run the job again
    /// after `backoff`; `None`: the attempts are exhausted.
    fn retry(&self, attempt: u32, cause: &str) -> Option<Duration>;
}

/// Never retry: the first technical fault is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoRetry;

impl RetryPolicy for NoRetry {
    fn retry(&self, _attempt: u32, _cause: &str) -> Option<Duration> {
        None
    }
}

/// Up to `max_attempts` attempts in all, `delay` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedDelay {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Backoff before every retry.
    pub delay: Duration,
}

impl RetryPolicy for FixedDelay {
    fn retry(&self, attempt: u32, _cause: &str) -> Option<Duration> {
        (attempt < self.max_attempts).then_some(self.delay)
    }
}

/// Up to `max_attempts` attempts in all; the backoff after attempt `n` is
/// `base * 2^(n-1)`, capped at `max`; with `jitter`, a uniformly random
/// duration between half of that and all of it ("equal jitter").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExponentialBackoff {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// Backoff after the first attempt.
    pub base: Duration,
    /// Largest backoff.
    pub max: Duration,
    /// Whether to randomize each backoff in `[b/2, b]`.
    pub jitter: bool,
}

impl ExponentialBackoff {
    /// The backoff after `attempt` before jitter.
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.saturating_sub(1)).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.max)
    }
}

impl RetryPolicy for ExponentialBackoff {
    fn retry(&self, attempt: u32, _cause: &str) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        let ceiling = self.ceiling(attempt);
        if !self.jitter {
            return Some(ceiling);
        }
        let half = ceiling / 2;
        let spread = (ceiling - half).as_nanos() as u64;
        Some(half + Duration::from_nanos(if spread == 0 { 0 } else { fastrand::u64(0..=spread) }))
    }
}

/// The built-in default: 3 attempts, exponential backoff from 1 s up to
/// 1 min, with jitter.
pub const DEFAULT_RETRY: ExponentialBackoff =
    ExponentialBackoff { max_attempts: 3, base: Duration::from_secs(1), max: Duration::from_secs(60), jitter: true };

/// A retry policy as data: what a topic's config names and what the store
/// keeps with each job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum RetryPolicySpec {
    /// [`NoRetry`].
    None,
    /// [`FixedDelay`].
    Fixed {
        /// Attempts in all.
        max_attempts: u32,
        /// Backoff before every retry, e.g. `"5s"`.
        #[serde(with = "humantime_serde")]
        delay: Duration,
    },
    /// [`ExponentialBackoff`].
    Exponential {
        /// Attempts in all.
        max_attempts: u32,
        /// Backoff after the first attempt, e.g. `"1s"`.
        #[serde(with = "humantime_serde")]
        base: Duration,
        /// Largest backoff, e.g. `"1m"`.
        #[serde(with = "humantime_serde")]
        max: Duration,
        /// Randomize each backoff in `[b/2, b]` (default `true`).
        #[serde(default = "yes")]
        jitter: bool,
    },
}

fn yes() -> bool {
    true
}

impl Default for RetryPolicySpec {
    /// [`DEFAULT_RETRY`]: 3 attempts, exponential with jitter.
    fn default() -> Self {
        let ExponentialBackoff { max_attempts, base, max, jitter } = DEFAULT_RETRY;
        Self::Exponential { max_attempts, base, max, jitter }
    }
}

impl RetryPolicySpec {
    /// Two-level resolution: the topic's policy over the engine-wide
    /// default over the built-in [`RetryPolicySpec::default`].
    pub fn resolve(topic: Option<Self>, engine: Option<Self>) -> Self {
        topic.or(engine).unwrap_or_default()
    }

    /// The most attempts this policy allows.
    pub fn max_attempts(&self) -> u32 {
        match *self {
            Self::None => 1,
            Self::Fixed { max_attempts, .. } | Self::Exponential { max_attempts, .. } => max_attempts.max(1),
        }
    }

    /// The policy of a retried incident whose job made `made` attempts: a
    /// fresh budget of as many attempts again, numbered on from `made + 1`
    /// (an exponential backoff goes on growing from there, up to its max).
    pub fn continued(self, made: u32) -> Self {
        match self {
            Self::None => Self::None,
            Self::Fixed { max_attempts, delay } => {
                Self::Fixed { max_attempts: max_attempts.max(1).saturating_add(made), delay }
            }
            Self::Exponential { max_attempts, base, max, jitter } => {
                Self::Exponential { max_attempts: max_attempts.max(1).saturating_add(made), base, max, jitter }
            }
        }
    }
}

impl RetryPolicy for RetryPolicySpec {
    fn retry(&self, attempt: u32, cause: &str) -> Option<Duration> {
        match *self {
            Self::None => NoRetry.retry(attempt, cause),
            Self::Fixed { max_attempts, delay } => FixedDelay { max_attempts, delay }.retry(attempt, cause),
            Self::Exponential { max_attempts, base, max, jitter } => {
                ExponentialBackoff { max_attempts, base, max, jitter }.retry(attempt, cause)
            }
        }
    }
}
