//! Time, as the dispatcher sees it: the system clock in production, a
//! manual clock in tests (backoff gates, lock expiry and timed wakes are then
//! driven by the test, never by sleeping).

use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use parking_lot::{Condvar, Mutex};

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

/// Wakes threads waiting for "something changed" (a job enqueued, a gate
/// moved, the clock advanced, a shutdown). A waiter remembers what it saw
/// ([`Notifier::seen`]) before it looked for work, and sleeps until a change
/// after that or until its wait ends.
///
/// Two kinds of change: one that concerns every waiter
/// ([`Notifier::notify`]), and wakes each meant for one waiter
/// ([`Notifier::notify_some`]: one per new job). A wake for one is taken
/// by one waiter only, whether it was asleep or still busy looking when the
/// wake came: so under load, one new job costs one more look, not one for
/// every waiter that was busy meanwhile.
#[derive(Debug, Default)]
pub struct Notifier {
    state: Mutex<Generation>,
    changed: Condvar,
}

/// A [`Notifier`]'s count of changes for all, its wakes for one given and
/// taken, and how many threads sleep on it.
#[derive(Debug, Default)]
struct Generation {
    value: u64,
    granted: u64,
    taken: u64,
    sleepers: usize,
}

impl Generation {
    /// Takes a wake for one, if one is left.
    fn take(&mut self) -> bool {
        let left = self.taken < self.granted;
        if left {
            self.taken += 1;
        }
        left
    }
}

/// What a waiter saw of a [`Notifier`] before it looked for work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    generation: u64,
    granted: u64,
}

impl Notifier {
    /// A new notifier.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// What has happened so far: pass it to [`Notifier::wait`] to sleep
    /// until something changes after this point.
    pub fn seen(&self) -> Seen {
        let state = self.state.lock();
        Seen { generation: state.value, granted: state.granted }
    }

    /// How many threads sleep in [`Notifier::wait`] now.
    pub fn sleepers(&self) -> usize {
        self.state.lock().sleepers
    }

    /// Wakes every waiter.
    pub fn notify(&self) {
        let mut state = self.state.lock();
        state.value = state.value.wrapping_add(1);
        self.changed.notify_all();
    }

    /// Gives `waiters` wakes, each for one waiter: asleep in
    /// [`Notifier::wait`] (as many are woken), or on its way there (it
    /// takes one and does not fall asleep), so nothing is missed by a
    /// waiter about to wait.
    pub fn notify_some(&self, waiters: u64) {
        let mut state = self.state.lock();
        state.granted = state.granted.saturating_add(waiters);
        for _ in 0..waiters {
            if !self.changed.notify_one() {
                break;
            }
        }
    }

    /// Sleeps until a change for all after `seen`, or a wake for one left
    /// for this waiter (taken), or until `timeout` (real time) passes;
    /// `None` waits without a timeout.
    ///
    /// `looked`: the waiter looked for work after `seen` and found none.
    /// Then the wakes for one given before `seen` and not yet taken were
    /// for work that was there to find, and is gone: they are dropped
    /// rather than make other waiters look for nothing.
    pub fn wait(&self, seen: Seen, looked: bool, timeout: Option<Duration>) {
        let mut state = self.state.lock();
        if state.value != seen.generation {
            return;
        }
        if looked {
            state.taken = state.taken.max(seen.granted);
        }
        if state.take() {
            return;
        }
        state.sleepers += 1;
        let asleep = |s: &mut Generation| s.value == seen.generation && s.taken >= s.granted;
        match timeout {
            Some(timeout) => drop(self.changed.wait_while_for(&mut state, asleep, timeout)),
            None => self.changed.wait_while(&mut state, asleep),
        }
        state.sleepers -= 1;
        if state.value == seen.generation {
            state.take();
        }
    }

    /// Sleeps until a change for all after `seen`, or until `timeout`
    /// (real time) passes; wakes for one neither end the sleep nor are
    /// taken (they are for waiters that would find work).
    pub fn wait_for_all(&self, seen: Seen, timeout: Option<Duration>) {
        let mut state = self.state.lock();
        state.sleepers += 1;
        let asleep = |s: &mut Generation| s.value == seen.generation;
        match timeout {
            Some(timeout) => drop(self.changed.wait_while_for(&mut state, asleep, timeout)),
            None => self.changed.wait_while(&mut state, asleep),
        }
        state.sleepers -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::Notifier;

    /// Spins (no sleep) until `done` holds.
    fn until(done: impl Fn() -> bool) {
        while !done() {
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_wake_for_one_is_taken_by_one_waiter_even_a_busy_one_and_a_fruitless_look_drops_older_ones() {
        let notifier = Notifier::new();
        // Two waiters are busy looking when one job comes: the first to
        // wait takes its wake and looks again; the second sleeps on.
        let (first, second) = (notifier.seen(), notifier.seen());
        notifier.notify_some(1);
        notifier.wait(first, true, None);
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| notifier.wait(second, true, None));
            until(|| notifier.sleepers() == 1 || waiter.is_finished());
            assert!(!waiter.is_finished(), "one job's wake wakes one waiter");
            notifier.notify_some(1);
            waiter.join().unwrap();
        });
        // Three wakes come before a look that then finds nothing: their
        // jobs were taken by others, so that waiter sleeps despite them.
        notifier.notify_some(3);
        let looked = notifier.seen();
        std::thread::scope(|scope| {
            let waiter = scope.spawn(|| notifier.wait(looked, true, None));
            until(|| notifier.sleepers() == 1 || waiter.is_finished());
            assert!(!waiter.is_finished(), "wakes older than a fruitless look are dropped");
            notifier.notify();
            waiter.join().unwrap();
        });
        // A waiter that did not look (no permits, say) keeps an older wake.
        notifier.notify_some(1);
        let idle = notifier.seen();
        notifier.wait(idle, false, None);
        assert_eq!(notifier.sleepers(), 0);
    }
}
