//! The queue kept lean: each process vacuums `husk_jobs` as jobs pass
//! through it.
//!
//! Every claim and every report leaves a dead row version in `husk_jobs`,
//! and a claimed job's old version stays in the `(topic, id)` index that
//! claims walk in id order: until a `VACUUM` removes them, each claim steps
//! over every job claimed since the last one. Autovacuum looks at a table
//! at most once a minute (`autovacuum_naptime`), while at thousands of jobs
//! a second the dead versions pile up by the hundred thousand. So each
//! process counts the dead versions its own claims and reports leave, and
//! past [`VACUUM_AFTER`] of them its vacuum thread runs `VACUUM
//! (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE FALSE) husk_jobs`:
//!
//! - `SKIP_LOCKED`: skipped at once when another process's vacuum (or
//!   autovacuum) holds the table, so processes never queue behind each
//!   other;
//! - `INDEX_CLEANUP ON`: the index entries are the point, so the server may
//!   not decide to skip them;
//! - `TRUNCATE FALSE`: cutting empty pages off the table's end takes a lock
//!   that would stop every claim while it is held.
//!
//! The thread has a connection of its own, not one of the pool's: a
//! vacuum of a large table takes seconds, which a pool slot held that long
//! would take from claims and reports.
//!
//! A vacuum reads the whole table and its indexes, so its cost grows with
//! the backlog, not with the dead versions: after one that took `t`, the
//! thread waits at least [`GAP_FACTOR`] × `t` (and [`MIN_GAP`]) before the
//! next, which keeps it to a small part of one server process's time. A
//! role that does not own the table gets a warning from the server and
//! nothing is vacuumed, as when another vacuum holds the table: autovacuum
//! alone then. A failed vacuum is logged (and its connection opened again
//! for the next); nothing depends on it but speed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use postgres::{Client, NoTls};

use crate::pool::describe;

/// Dead row versions this process leaves before it vacuums.
pub(crate) const VACUUM_AFTER: u64 = 20_000;

/// Least time between the end of one vacuum and the start of the next.
pub(crate) const MIN_GAP: Duration = Duration::from_millis(100);

/// How many times its own duration a vacuum waits before the next.
pub(crate) const GAP_FACTOR: u32 = 4;

/// The statement.
const VACUUM: &str = "VACUUM (SKIP_LOCKED, INDEX_CLEANUP ON, TRUNCATE FALSE) husk_jobs";

#[derive(Default)]
struct State {
    /// A vacuum is wanted.
    asked: bool,
    /// The store is dropped: the thread ends.
    closed: bool,
}

#[derive(Default)]
struct Shared {
    /// Dead versions left since the last vacuum started.
    dead: AtomicU64,
    state: Mutex<State>,
    changed: Condvar,
}

/// A process's vacuum of `husk_jobs` (see the module docs).
pub(crate) struct Vacuum {
    shared: Arc<Shared>,
    /// The database, for the thread's own connection.
    config: postgres::Config,
    name: String,
    /// Whether the thread was started.
    started: Mutex<bool>,
}

impl Vacuum {
    pub(crate) fn new(config: postgres::Config, name: String) -> Self {
        Self { shared: Arc::default(), config, name, started: Mutex::new(false) }
    }

    /// Counts `versions` dead row versions this process left; asks for a
    /// vacuum when they pass [`VACUUM_AFTER`].
    pub(crate) fn left(&self, versions: u64) {
        if versions == 0 {
            return;
        }
        let before = self.shared.dead.fetch_add(versions, Ordering::Relaxed);
        if before < VACUUM_AFTER && before + versions >= VACUUM_AFTER {
            self.ask();
        }
    }

    fn ask(&self) {
        let mut started = self.started.lock();
        if !*started {
            let (shared, config, name) = (self.shared.clone(), self.config.clone(), self.name.clone());
            match std::thread::Builder::new().name("husk-pg-vacuum".into()).spawn(move || run(&shared, &config, &name))
            {
                Ok(_) => *started = true,
                Err(error) => {
                    tracing::warn!(store = %self.name, %error, "cannot start the vacuum thread");
                    // Counted afresh: the next 20,000 ask again.
                    self.shared.dead.store(0, Ordering::Relaxed);
                    return;
                }
            }
        }
        self.shared.state.lock().asked = true;
        self.shared.changed.notify_one();
    }
}

impl Drop for Vacuum {
    /// Ends the thread without waiting for it: a vacuum under way (seconds
    /// on a large table) finishes on its own, and the thread ends after it.
    fn drop(&mut self) {
        self.shared.state.lock().closed = true;
        self.shared.changed.notify_all();
    }
}

/// The vacuum thread: one vacuum each time one is asked for, spaced out.
fn run(shared: &Shared, config: &postgres::Config, name: &str) {
    let mut client: Option<Client> = None;
    loop {
        {
            let mut state = shared.state.lock();
            while !state.asked && !state.closed {
                shared.changed.wait(&mut state);
            }
            if state.closed {
                return;
            }
            state.asked = false;
        }
        shared.dead.store(0, Ordering::Relaxed);
        let started = Instant::now();
        let result = match client.take().map_or_else(|| config.connect(NoTls), Ok) {
            Ok(mut connected) => {
                let result = connected.batch_execute(VACUUM).map_err(|e| describe(&e));
                if result.is_ok() {
                    client = Some(connected);
                }
                result
            }
            Err(e) => Err(describe(&e)),
        };
        let took = started.elapsed();
        match result {
            // The server may have skipped the table (held, or not ours).
            Ok(()) => tracing::debug!(store = %name, ?took, "vacuum of husk_jobs done"),
            Err(error) => tracing::warn!(store = %name, %error, "vacuuming husk_jobs failed"),
        }
        let gap = (took * GAP_FACTOR).max(MIN_GAP);
        let until = Instant::now() + gap;
        let mut state = shared.state.lock();
        while !state.closed && !shared.changed.wait_until(&mut state, until).timed_out() {}
        if state.closed {
            return;
        }
    }
}
