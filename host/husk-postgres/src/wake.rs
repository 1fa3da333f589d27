//! Waking other processes' fetchers, after the commit and coalesced.
//!
//! A `NOTIFY` inside a transaction takes PostgreSQL's notification queue
//! lock at commit and holds it through the commit's WAL flush, so every
//! notifying transaction of every process commits one after another,
//! sharing no flush. So a transaction that makes jobs fetchable only marks
//! itself ([`Tx::wake_fetchers`](crate::pool::Tx::wake_fetchers)); once it
//! has committed, [`Waker::wake`] asks this process's waker thread for one
//! `NOTIFY`, sent on a connection of its own outside any data transaction.
//! Wakes asked while one is being sent are merged into the next: at most
//! one `NOTIFY` in flight per process, and it is sent after the data it
//! announces is visible. A `NOTIFY` that fails is logged; the other
//! processes' fetchers still look at their poll timeout, so nothing is lost.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

use crate::Channels;
use crate::pool::Manager;

#[derive(Debug, Default)]
struct State {
    pending: bool,
    stop: bool,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

/// This process's sender of `NOTIFY` on the jobs channel.
#[derive(Debug)]
pub(crate) struct Waker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Waker {
    /// Starts the thread sending `NOTIFY` on the jobs channel, on
    /// connections of `pool`: committed without waiting for the WAL flush
    /// (a wake lost in a crash costs a poll timeout at most), with this
    /// store's mark as the payload, which its own listener ignores.
    pub(crate) fn start(pool: r2d2::Pool<Manager>, channels: &Channels, name: String) -> Self {
        let notify = format!(
            "BEGIN; SET LOCAL synchronous_commit TO off; SELECT pg_notify('{}', '{}'); COMMIT",
            channels.jobs, channels.sender
        );
        let shared = Arc::new(Shared::default());
        let state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("husk-pg-wake".into())
            .spawn(move || {
                while state.next() {
                    let sent = pool
                        .get()
                        .map_err(|e| e.to_string())
                        .and_then(|mut conn| conn.client.batch_execute(&notify).map_err(|e| e.to_string()));
                    if let Err(error) = sent {
                        tracing::warn!(store = %name, %error, "cannot wake other processes' fetchers (they look again at their poll timeout)");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            })
            .expect("spawning the PostgreSQL wake thread");
        Self { shared, thread: Some(thread) }
    }

    /// Asks for a `NOTIFY` (call after the commit that made jobs fetchable).
    pub(crate) fn wake(&self) {
        let mut state = self.shared.state.lock();
        if !state.pending {
            state.pending = true;
            self.shared.changed.notify_one();
        }
    }
}

impl Shared {
    /// Waits for a wake to send (`true`, taking it) or the stop (`false`).
    fn next(&self) -> bool {
        let mut state = self.state.lock();
        self.changed.wait_while(&mut state, |s| !s.pending && !s.stop);
        if state.stop {
            return false;
        }
        state.pending = false;
        true
    }
}

impl Drop for Waker {
    fn drop(&mut self) {
        self.shared.state.lock().stop = true;
        self.shared.changed.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
