//! Concurrent enqueues share one store call: one transaction, one commit.
//!
//! Each API request enqueues on a thread of its own; each of its store calls
//! is a transaction whose commit costs the same whether it holds one job or
//! a hundred (a WAL append for SQLite, a WAL flush for PostgreSQL). So the
//! first caller to arrive leads: it takes every enqueue waiting, makes one
//! store call of them all, and hands each caller its own results; callers
//! arriving meanwhile wait, and one of them leads the next round. A caller
//! alone leads at once: nothing waits for company.
//!
//! Each caller's jobs stay all or nothing. When the shared call fails, each
//! caller's jobs are tried again in a call of their own, so a caller gets
//! its own result or error. Idempotency keys across callers behave as if
//! the calls ran one after another, in arrival order: the store resolves a
//! key repeated within one call to the first job that took it.
//!
//! A store that groups concurrent calls into one commit itself
//! ([`Behaviour::commits_in_groups`]) gets each enqueue as it comes: waiting
//! here for the round ahead would only add that wait to its own.
//!
//! [`Behaviour::commits_in_groups`]: crate::store::Behaviour::commits_in_groups

use std::collections::HashMap;

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::store::{Enqueued, NewJob, StoreError};

type Outcome = Result<Vec<Enqueued>, StoreError>;

#[derive(Debug, Default)]
struct State {
    /// Whether a caller is making a store call for others now.
    leading: bool,
    next_ticket: u64,
    /// Enqueues waiting for a leader, in arrival order.
    waiting: Vec<(u64, Vec<NewJob>)>,
    /// Results a leader made for callers that have not taken them yet.
    done: HashMap<u64, Outcome>,
}

/// Combines concurrent enqueues (see the module docs).
#[derive(Debug)]
pub(super) struct Combiner {
    /// Whether enqueues share calls; else each makes its own at once.
    sharing: bool,
    state: Mutex<State>,
    changed: Condvar,
}

impl Combiner {
    /// A combiner whose enqueues share calls if `sharing`, else each
    /// makes its own as it comes.
    pub(super) fn new(sharing: bool) -> Self {
        Self { sharing, state: Mutex::default(), changed: Condvar::new() }
    }

    /// Enqueues `jobs` through `store` (a store call: one transaction),
    /// shared with the enqueues of other threads waiting at the same time.
    pub(super) fn enqueue(&self, jobs: Vec<NewJob>, store: impl Fn(Vec<NewJob>) -> Outcome) -> Outcome {
        if !self.sharing {
            return store(jobs);
        }
        let mut state = self.state.lock();
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        state.waiting.push((ticket, jobs));
        loop {
            if let Some(outcome) = state.done.remove(&ticket) {
                return outcome;
            }
            if state.leading {
                self.changed.wait(&mut state);
                continue;
            }
            state.leading = true;
            let round = std::mem::take(&mut state.waiting);
            let outcomes = MutexGuard::unlocked(&mut state, || run(round, &store));
            state.done.extend(outcomes);
            state.leading = false;
            self.changed.notify_all();
        }
    }
}

/// One store call for every enqueue of `round`; one call each if it fails.
fn run(round: Vec<(u64, Vec<NewJob>)>, store: &impl Fn(Vec<NewJob>) -> Outcome) -> Vec<(u64, Outcome)> {
    if let [_] = round.as_slice() {
        return round.into_iter().map(|(ticket, jobs)| (ticket, store(jobs))).collect();
    }
    let sizes: Vec<usize> = round.iter().map(|(_, jobs)| jobs.len()).collect();
    let all: Vec<NewJob> = round.iter().flat_map(|(_, jobs)| jobs.iter().cloned()).collect();
    match store(all) {
        Ok(mut enqueued) => {
            let mut outcomes = Vec::with_capacity(round.len());
            for ((ticket, _), size) in round.iter().zip(sizes).rev() {
                outcomes.push((*ticket, Ok(enqueued.split_off(enqueued.len() - size))));
            }
            outcomes
        }
        Err(_) => round.into_iter().map(|(ticket, jobs)| (ticket, store(jobs))).collect(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};

    use super::Combiner;
    use crate::retry::RetryPolicySpec;
    use crate::store::{Enqueued, JobId, NewJob, StoreError};

    fn job(key: &str) -> NewJob {
        NewJob {
            topic: "t".into(),
            input: b"{}".to_vec(),
            policy: RetryPolicySpec::None,
            not_before: None,
            key: Some(key.into()),
            keep_input: true,
            priority: 0,
        }
    }

    #[test]
    fn callers_waiting_together_share_one_call_and_each_gets_its_own_results() {
        let combiner = Arc::new(Combiner::new(true));
        let calls = Arc::new(parking_lot::Mutex::new(Vec::<usize>::new()));
        // The first call blocks until every other caller is waiting.
        let gate = Arc::new(Barrier::new(2));
        let store = {
            let (calls, gate) = (calls.clone(), gate.clone());
            move |jobs: Vec<NewJob>| {
                let first = calls.lock().is_empty();
                calls.lock().push(jobs.len());
                if first {
                    gate.wait();
                }
                // Ids from the keys: "k<caller>-<n>" becomes caller * 100 + n.
                Ok::<_, StoreError>(
                    jobs.iter()
                        .map(|j| {
                            let key = j.key.as_deref().unwrap();
                            let (caller, n) = key[1..].split_once('-').unwrap();
                            let id = caller.parse::<u64>().unwrap() * 100 + n.parse::<u64>().unwrap();
                            Enqueued { id: JobId(id), created: true }
                        })
                        .collect(),
                )
            }
        };
        let store = Arc::new(store);
        let first = {
            let (combiner, store) = (combiner.clone(), store.clone());
            std::thread::spawn(move || combiner.enqueue(vec![job("k0-1")], |jobs| store(jobs)).unwrap())
        };
        // Wait until the first call runs, then queue three more callers.
        while calls.lock().is_empty() {
            std::thread::yield_now();
        }
        let others: Vec<_> = (1..=3u64)
            .map(|caller| {
                let (combiner, store) = (combiner.clone(), store.clone());
                std::thread::spawn(move || {
                    let jobs = (1..=caller).map(|n| job(&format!("k{caller}-{n}"))).collect();
                    combiner.enqueue(jobs, |jobs| store(jobs)).unwrap()
                })
            })
            .collect();
        while combiner.state.lock().waiting.len() < 3 {
            std::thread::yield_now();
        }
        gate.wait();
        assert_eq!(first.join().unwrap(), vec![Enqueued { id: JobId(1), created: true }]);
        for (caller, thread) in (1..=3u64).zip(others) {
            let ids: Vec<u64> = thread.join().unwrap().iter().map(|e| e.id.0).collect();
            assert_eq!(ids, (1..=caller).map(|n| caller * 100 + n).collect::<Vec<_>>());
        }
        assert_eq!(*calls.lock(), vec![1, 1 + 2 + 3], "the three waiting callers shared one call");
    }

    #[test]
    fn without_sharing_each_caller_makes_its_own_call_at_once() {
        let combiner = Arc::new(Combiner::new(false));
        // Each call waits in the store until all three are in it at the same
        // time: callers waiting for a round ahead would never get there.
        let inside = Arc::new((parking_lot::Mutex::new(0usize), parking_lot::Condvar::new()));
        let store = {
            let inside = inside.clone();
            move |jobs: Vec<NewJob>| {
                let (count, all_in) = &*inside;
                let mut count = count.lock();
                *count += 1;
                all_in.notify_all();
                while *count < 3 {
                    all_in.wait(&mut count);
                }
                Ok::<_, StoreError>(jobs.iter().map(|_| Enqueued { id: JobId(1), created: true }).collect())
            }
        };
        let store = Arc::new(store);
        let callers: Vec<_> = (1..=3usize)
            .map(|caller| {
                let (combiner, store) = (combiner.clone(), store.clone());
                std::thread::spawn(move || {
                    let jobs = (1..=caller).map(|n| job(&format!("k{caller}-{n}"))).collect();
                    combiner.enqueue(jobs, |jobs| store(jobs)).unwrap().len()
                })
            })
            .collect();
        {
            let (count, all_in) = &*inside;
            let mut count = count.lock();
            while *count < 3 {
                // A guard against a hang, not a measure of anything.
                let waited = all_in.wait_for(&mut count, std::time::Duration::from_secs(60));
                assert!(!waited.timed_out(), "the three calls were never in the store together: {}", *count);
            }
        }
        let sizes: Vec<usize> = callers.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(sizes, vec![1, 2, 3], "each caller's own call, its own jobs");
    }

    #[test]
    fn a_shared_call_that_fails_is_retried_per_caller() {
        let combiner = Combiner::new(true);
        combiner.state.lock().waiting.push((100, vec![job("bad-1")]));
        combiner.state.lock().next_ticket = 101;
        // This caller leads a round with the waiting enqueue of "ticket 100":
        // the shared call fails (a bad key is in it), this caller's own succeeds.
        let store = |jobs: Vec<NewJob>| {
            if jobs.iter().any(|j| j.key.as_deref() == Some("bad-1")) {
                Err(StoreError::Failed { store: "test".into(), message: "refused".into(), cause: None })
            } else {
                Ok(jobs.iter().map(|_| Enqueued { id: JobId(7), created: true }).collect())
            }
        };
        assert_eq!(
            combiner.enqueue(vec![job("good-1")], store).unwrap(),
            vec![Enqueued { id: JobId(7), created: true }]
        );
        assert!(combiner.state.lock().done.remove(&100).unwrap().is_err(), "the other caller gets its own error");
    }
}
