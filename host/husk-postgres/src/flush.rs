//! Group commit across a process's connections: enqueues commit without
//! waiting for their WAL flush, then wait for one shared flush.
//!
//! A commit with `synchronous_commit = on` waits for the WAL to reach the
//! disk before it returns, and while it waits it still holds what it took
//! at commit — with a `NOTIFY`, the lock that serializes every notifying
//! commit in the database. Enqueues answering one HTTP request each then
//! queue behind each other's flushes: measured on the project's VM, three
//! processes enqueuing one job per request spent most of their commits
//! waiting in `WALSync` or on `WALWriteLock`, about one flush (≈0.4 ms
//! under that load) per job.
//!
//! So an enqueue commits asynchronously (`synchronous_commit = off`, set
//! in its transaction) and then calls [`Flusher::durable`] before it
//! returns: the first caller runs a *barrier* — a transaction that takes a
//! transaction id and commits synchronously, so its commit waits for the
//! WAL up to its own commit record, which lies after every commit that
//! returned before the barrier began — and every caller that arrived
//! before that barrier began is released by it. Callers arriving while a
//! barrier runs share the next one. WAL is flushed in order, so a caller
//! released by a barrier has its own commit on disk: the enqueue returns
//! only once it would survive a crash of the server, as before.
//!
//! What changes is visibility: between the asynchronous commit and the
//! flush, other sessions see the jobs (and may claim and run them) before
//! they are durable. A server crash in that window loses the enqueue and
//! everything written after it — the run's report too, since WAL is
//! flushed in order — and its caller, who was never answered, enqueues it
//! again (with its idempotency key, once). That is the at-least-once a job
//! already has when a report is lost. (Its job id, too, may be drawn again
//! after such a crash: a sequence's advance is flushed with the first
//! synchronous commit after it.)
//!
//! Reports are not committed so: a report draws its outcomes' `seq`s, and
//! a reader of the outcome stream that saw an outcome before its flush
//! would, after a server crash lost it, hold a cursor past `seq`s that are
//! drawn again — and skip the outcomes that get them.

use parking_lot::{Condvar, Mutex};

#[derive(Debug, Default)]
struct State {
    /// Tickets handed out: one per caller, in arrival order.
    issued: u64,
    /// Every ticket up to this one is flushed.
    flushed: u64,
    /// A caller runs a barrier now.
    flushing: bool,
}

/// Shares flushes among the callers of [`Flusher::durable`] (see the
/// module docs).
#[derive(Debug, Default)]
pub(crate) struct Flusher {
    state: Mutex<State>,
    changed: Condvar,
}

impl Flusher {
    /// Returns once a barrier that began after this call began has
    /// committed (`barrier`: one synchronous commit), running it here when
    /// no other caller runs one. A failed barrier is this caller's error;
    /// callers waiting on it try again.
    pub(crate) fn durable<E>(&self, barrier: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
        let mut state = self.state.lock();
        state.issued += 1;
        let ticket = state.issued;
        loop {
            if state.flushed >= ticket {
                return Ok(());
            }
            if !state.flushing {
                break;
            }
            self.changed.wait(&mut state);
        }
        // Lead: every ticket issued so far belongs to a caller whose commit
        // returned before this barrier begins.
        state.flushing = true;
        let covers = state.issued;
        drop(state);
        let result = barrier();
        let mut state = self.state.lock();
        state.flushing = false;
        if result.is_ok() {
            state.flushed = state.flushed.max(covers);
        }
        self.changed.notify_all();
        result
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Duration;

    use parking_lot::Mutex;

    use super::Flusher;

    /// Sixteen threads each "commit" (take a number from a logical clock)
    /// and wait for durability: each returns only after a whole barrier
    /// that began after its commit, and they share barriers.
    #[test]
    fn each_caller_returns_after_a_barrier_that_began_after_its_commit_and_callers_share_barriers() {
        let flusher = Arc::new(Flusher::default());
        let clock = Arc::new(AtomicU64::new(0));
        // Each barrier's start and end on the clock.
        let barriers = Arc::new(Mutex::new(Vec::<(u64, u64)>::new()));
        let threads: Vec<_> = (0..16)
            .map(|_| {
                let (flusher, clock, barriers) = (flusher.clone(), clock.clone(), barriers.clone());
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let committed = clock.fetch_add(1, Ordering::SeqCst);
                        flusher
                            .durable(|| {
                                let start = clock.fetch_add(1, Ordering::SeqCst);
                                std::thread::sleep(Duration::from_micros(200));
                                barriers.lock().push((start, clock.fetch_add(1, Ordering::SeqCst)));
                                Ok::<(), ()>(())
                            })
                            .unwrap();
                        let returned = clock.fetch_add(1, Ordering::SeqCst);
                        assert!(
                            barriers.lock().iter().any(|&(start, end)| committed < start && end < returned),
                            "released by a barrier that began after the commit and ended before the return"
                        );
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        let barriers = barriers.lock().len();
        assert!(barriers < 16 * 200, "callers waiting together shared barriers ({barriers} for 3,200 calls)");
    }

    /// A failed barrier fails its runner; a caller waiting on it runs the
    /// next one rather than being released by the failure.
    #[test]
    fn a_failed_barrier_releases_nobody() {
        let flusher = Flusher::default();
        assert_eq!(flusher.durable(|| Err::<(), &str>("connection lost")), Err("connection lost"));
        let mut ran = false;
        flusher
            .durable(|| {
                ran = true;
                Ok::<(), &str>(())
            })
            .unwrap();
        assert!(ran, "the next caller flushes again");
    }
}
