//! Waking threads that wait for work: the dispatcher's fetchers sleep on a
//! [`Notifier`] until an enqueue, a gate, a clock change or a shutdown
//! wakes them.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

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
