//! A sink tests can wait on: blocks until a number of outcomes arrived.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use husk::outcome::{OutcomeSink, TerminalOutcome};

#[derive(Default)]
pub struct WaitingSink {
    outcomes: Mutex<Vec<TerminalOutcome>>,
    arrived: Condvar,
}

impl WaitingSink {
    /// Waits until at least `n` outcomes arrived (panics after `timeout`,
    /// a guard against a hung test, not a measurement) and returns them all.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<TerminalOutcome> {
        let guard = self.outcomes.lock().unwrap();
        let (guard, result) = self.arrived.wait_timeout_while(guard, timeout, |o| o.len() < n).unwrap();
        assert!(!result.timed_out(), "only {} of {n} outcomes arrived", guard.len());
        guard.clone()
    }

    /// Waits until at least `n` outcomes arrived (see `wait_for`).
    pub fn wait_len(&self, n: usize, timeout: Duration) {
        let guard = self.outcomes.lock().unwrap();
        let (guard, result) = self.arrived.wait_timeout_while(guard, timeout, |o| o.len() < n).unwrap();
        assert!(!result.timed_out(), "only {} of {n} outcomes arrived", guard.len());
    }

    pub fn len(&self) -> usize {
        self.outcomes.lock().unwrap().len()
    }

    pub fn all(&self) -> Vec<TerminalOutcome> {
        self.outcomes.lock().unwrap().clone()
    }
}

impl OutcomeSink for WaitingSink {
    fn deliver(&self, outcome: &TerminalOutcome) {
        self.outcomes.lock().unwrap().push(outcome.clone());
        self.arrived.notify_all();
    }
}
