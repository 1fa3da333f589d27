//! Time, as the dispatcher sees it: the system clock in production, a
//! manual clock in tests (backoff gates, lock expiry and timed wakes are then
//! driven by the test, never by sleeping).

use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

use crate::notify::Notifier;

/// A source of the current time that can also wake waiters when time moves.
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// The current time.
    fn now(&self) -> SystemTime;

    /// How long to really block while waiting for clock time `until`:
    /// `Some(real duration)` for a clock that moves by itself, `None` (block
    /// until notified) for a clock moved by hand.
    fn real_wait(&self, until: SystemTime) -> Option<Duration>;

    /// Registers a notifier to wake whenever the clock is moved by hand.
    /// The system clock ignores it.
    fn subscribe(&self, notifier: &Arc<Notifier>);
}

/// The system's wall clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }

    fn real_wait(&self, until: SystemTime) -> Option<Duration> {
        Some(until.duration_since(SystemTime::now()).unwrap_or(Duration::ZERO))
    }

    fn subscribe(&self, _notifier: &Arc<Notifier>) {}
}

/// A clock that moves only when [`ManualClock::advance`] or
/// [`ManualClock::set`] is called. Cheap to clone; clones share the time.
#[derive(Debug, Clone)]
pub struct ManualClock {
    inner: Arc<Mutex<ManualInner>>,
}

#[derive(Debug)]
struct ManualInner {
    now: SystemTime,
    subscribers: Vec<Weak<Notifier>>,
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl ManualClock {
    /// A manual clock at 2026-01-01T00:00:00Z.
    pub fn new() -> Self {
        Self::starting_at(SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_225_600))
    }

    /// A manual clock at `now`.
    pub fn starting_at(now: SystemTime) -> Self {
        Self { inner: Arc::new(Mutex::new(ManualInner { now, subscribers: Vec::new() })) }
    }

    /// Moves the clock forward by `by` and wakes every waiter.
    pub fn advance(&self, by: Duration) {
        let mut inner = self.lock();
        inner.now += by;
        Self::wake(&mut inner);
    }

    /// Sets the clock to `now` and wakes every waiter.
    pub fn set(&self, now: SystemTime) {
        let mut inner = self.lock();
        inner.now = now;
        Self::wake(&mut inner);
    }

    fn wake(inner: &mut ManualInner) {
        inner.subscribers.retain(|weak| match weak.upgrade() {
            Some(notifier) => {
                notifier.notify();
                true
            }
            None => false,
        });
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, ManualInner> {
        self.inner.lock()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        self.lock().now
    }

    fn real_wait(&self, _until: SystemTime) -> Option<Duration> {
        None
    }

    fn subscribe(&self, notifier: &Arc<Notifier>) {
        self.lock().subscribers.push(Arc::downgrade(notifier));
    }
}
