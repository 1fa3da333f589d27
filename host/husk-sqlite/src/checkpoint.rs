//! The WAL checkpoint, on a thread of its own.
//!
//! A commit appends the pages it changed to the WAL; a checkpoint copies
//! them back into the database file, syncing the WAL before and the file
//! after. SQLite's default runs a checkpoint in the connection that
//! committed, once the WAL holds 1,000 pages: here that is the store's one
//! connection thread (see `group`), so every call queued behind that commit
//! waited for two `fsync`s. Under single enqueues the connection thread spent
//! about a fifth of its time in those disk waits, and they made the enqueue
//! latency's p99 (13 ms, against 3 ms with the checkpoints held off).
//!
//! So a checkpointer thread with a connection of its own runs them. A WAL
//! hook on the store's connection, called after each commit with the WAL's
//! length, asks for one each time the WAL has grown by [`Marks::soft`]
//! pages since it last asked. The checkpoint is passive: it copies what was
//! committed when it began while the connection thread goes on committing
//! behind it. (Asking after every commit past the mark instead ran one
//! checkpoint per commit or two, each with its syncs, and the commits' own
//! writes waited on the pages those syncs were writing out: the p99 stayed
//! at 11 ms.)
//!
//! But SQLite starts the WAL over (writing from its beginning again) only
//! when a transaction begins with every page of the WAL already copied, and
//! under a steady stream of commits a checkpoint running alongside never
//! catches the last one. So once the WAL holds [`Marks::hard`] pages, the
//! commit that found it so waits, before its callers are answered, for a
//! checkpoint begun after it: with nothing committed meanwhile that one
//! copies everything, and the next transaction starts the WAL over. The WAL
//! stays within about `hard` pages (4 KiB each) plus one transaction.

use std::os::raw::c_int;
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, ErrorCode, MAIN_DB};

/// When the WAL's length, in pages, calls for a checkpoint.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Marks {
    /// Each time the WAL has grown by this many pages, a commit asks the
    /// checkpointer for one.
    pub(crate) soft: c_int,
    /// From this length on, a commit waits for one that began after it.
    pub(crate) hard: c_int,
}

/// The store's marks: SQLite's own default for the soft one; the hard one
/// caps the WAL at about 32 MiB.
pub(crate) const MARKS: Marks = Marks { soft: 1_000, hard: 8_000 };

/// The checkpointer thread and its connection (see the module docs).
pub(crate) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Checkpointer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("Checkpointer").field("begun", &state.begun).field("ended", &state.ended).finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// A commit asked for a checkpoint since the last one began.
    wanted: bool,
    /// Checkpoints begun.
    begun: u64,
    /// Checkpoints ended (run, or failed).
    ended: u64,
    /// The store is dropped: the thread ends.
    closed: bool,
    /// Tests hold the thread before its next checkpoint.
    #[cfg(test)]
    held: bool,
    /// Commits waiting at the hard mark, for tests.
    #[cfg(test)]
    waiting: usize,
    /// Checkpoints asked for, for tests.
    #[cfg(test)]
    asked: usize,
}

impl Checkpointer {
    /// Starts the checkpointer thread, named `name`, on `conn`, a connection
    /// of its own to the store's file that has read it once (a connection
    /// that has not yet learnt the file is in WAL mode has no WAL to
    /// checkpoint).
    ///
    /// # Errors
    ///
    /// The thread cannot be started.
    pub(crate) fn start(conn: Connection, name: &str) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new().name(name.to_owned()).spawn(move || run(&conn, &shared))?
        };
        Ok(Self { shared, thread: Some(thread) })
    }

    /// Hands `writer`'s checkpoints to this thread, at `marks` (this
    /// replaces SQLite's automatic checkpoint on `writer`).
    ///
    /// # Errors
    ///
    /// SQLite refused the hook.
    pub(crate) fn take_over(&self, writer: &mut Connection, marks: Marks) -> rusqlite::Result<()> {
        let shared = self.shared.clone();
        // The WAL's length when the hook last asked; a shorter WAL started over.
        let mut asked_at = 0;
        // The commit is done when the hook runs: an error returned here
        // would report it failed. So the hook never returns one.
        writer.wal_hook(Some(move |_: &mut rusqlite::hooks::Wal, pages: c_int| {
            if pages < asked_at {
                asked_at = 0;
            }
            let full = pages >= marks.hard;
            if full || pages >= asked_at + marks.soft {
                asked_at = pages;
                shared.after_commit(full);
            }
            Ok(())
        }))
    }

    /// Checkpoints ended so far.
    #[cfg(test)]
    fn ended(&self) -> u64 {
        self.shared.state.lock().ended
    }
}

impl Shared {
    /// A commit grew the WAL by the soft mark: asks for a checkpoint and,
    /// past the hard one (`full`), waits for one begun after now.
    fn after_commit(&self, full: bool) {
        let mut state = self.state.lock();
        state.wanted = true;
        #[cfg(test)]
        {
            state.asked += 1;
        }
        self.changed.notify_all();
        if full {
            // Checkpoints run one at a time, and the next to begin takes
            // the request just made.
            let after = state.begun + 1;
            #[cfg(test)]
            {
                state.waiting += 1;
                self.changed.notify_all();
            }
            while state.ended < after && !state.closed {
                self.changed.wait(&mut state);
            }
            #[cfg(test)]
            {
                state.waiting -= 1;
            }
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.state.lock().closed = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The checkpointer thread: one passive checkpoint per request, requests
/// made during one answered by the next.
fn run(conn: &Connection, shared: &Shared) {
    loop {
        {
            let mut state = shared.state.lock();
            while (!state.wanted || held(&state)) && !state.closed {
                shared.changed.wait(&mut state);
            }
            if state.closed {
                return;
            }
            state.wanted = false;
            state.begun += 1;
        }
        // A checkpoint that fails leaves the WAL whole, to the next one:
        // another process's connection checkpointing the same file at that
        // moment (busy) is no fault; anything else is the disk's, and the
        // store's own writes will meet it and report it.
        match conn.wal_checkpoint_v2(Some(MAIN_DB), CheckpointMode::PASSIVE) {
            Ok(_) => {}
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => {}
            Err(error) => tracing::warn!(%error, "SQLite checkpoint failed; the next one tries again"),
        }
        shared.state.lock().ended += 1;
        shared.changed.notify_all();
    }
}

#[cfg(test)]
fn held(state: &State) -> bool {
    state.held
}

#[cfg(not(test))]
fn held(_: &State) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc::channel;

    use rusqlite::Connection;

    use super::{Checkpointer, Marks};

    /// A WAL database of table `t` at `dir`, with a writer whose
    /// checkpoints a checkpointer runs at `marks`.
    fn store(dir: &tempfile::TempDir, marks: Marks) -> (Connection, Checkpointer) {
        let path = dir.path().join("c.db");
        let mut writer = Connection::open(&path).unwrap();
        writer.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (v BLOB)").unwrap();
        let checkpoints = Connection::open(&path).unwrap();
        let mode: String = checkpoints.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        let checkpointer = Checkpointer::start(checkpoints, "test-checkpointer").unwrap();
        checkpointer.take_over(&mut writer, marks).unwrap();
        (writer, checkpointer)
    }

    /// Commits one row of 8 KiB: three pages or so in the WAL.
    fn commit(writer: &Connection) {
        writer.execute("INSERT INTO t (v) VALUES (zeroblob(8192))", []).unwrap();
    }

    fn wal_pages(dir: &tempfile::TempDir) -> u64 {
        std::fs::metadata(dir.path().join("c.db-wal")).unwrap().len() / 4096
    }

    fn hold(checkpointer: &Checkpointer, held: bool) {
        checkpointer.shared.state.lock().held = held;
        checkpointer.shared.changed.notify_all();
    }

    /// Waits until `check` holds of the state (each change wakes it). The
    /// minute is a guard against a hang, not a measure of anything.
    fn until(checkpointer: &Checkpointer, check: impl Fn(&super::State) -> bool) {
        let mut state = checkpointer.shared.state.lock();
        while !check(&state) {
            let waited = checkpointer.shared.changed.wait_for(&mut state, std::time::Duration::from_secs(60));
            assert!(!waited.timed_out(), "the state never came");
        }
    }

    fn file_len(dir: &tempfile::TempDir) -> u64 {
        std::fs::metadata(dir.path().join("c.db")).unwrap().len()
    }

    #[test]
    fn past_the_soft_mark_commits_go_on_while_the_checkpointer_copies_the_wal() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, checkpointer) = store(&dir, Marks { soft: 20, hard: 1_000_000 });
        hold(&checkpointer, true);
        let before = file_len(&dir);
        for _ in 0..20 {
            commit(&writer);
        }
        // Had the writer checkpointed (SQLite's own way, at 4 pages), the
        // file would hold the rows by now.
        assert_eq!(file_len(&dir), before, "the writer copied nothing into the file");
        let pages = wal_pages(&dir);
        assert!(pages >= 40, "every commit is still in the WAL: {pages} pages");
        assert_eq!(checkpointer.ended(), 0);
        // Once per 20 pages of growth, not after each commit past 20.
        let asked = checkpointer.shared.state.lock().asked;
        assert!((1..=pages as usize / 20).contains(&asked), "{asked} asks for {pages} pages");

        hold(&checkpointer, false);
        until(&checkpointer, |state| state.ended >= 1);
        let after = file_len(&dir);
        assert!(
            after >= before + 20 * 8192,
            "the checkpointer copied the WAL into the file: {before} -> {after} bytes"
        );
    }

    #[test]
    fn past_the_hard_mark_a_commit_waits_for_a_checkpoint_and_the_wal_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, checkpointer) = store(&dir, Marks { soft: 4, hard: 40 });
        hold(&checkpointer, true);
        let (done, committed) = channel();
        let checkpointer = std::sync::Arc::new(checkpointer);
        let committing = std::thread::spawn(move || {
            for i in 0..40 {
                commit(&writer);
                done.send(i).unwrap();
            }
            writer
        });
        // The commit that took the WAL past 40 pages waits in its hook.
        until(&checkpointer, |state| state.waiting == 1);
        let through: Vec<i32> = committed.try_iter().collect();
        let stuck = through.len();
        assert!((5..40).contains(&stuck), "commits answered before the hard mark: {stuck}");
        assert_eq!(checkpointer.ended(), 0);

        hold(&checkpointer, false);
        let writer = committing.join().unwrap();
        assert_eq!(committed.try_iter().count(), 40 - stuck, "the rest went through after the checkpoint");
        // The WAL started over when the commit after the checkpoint began:
        // its length stays that of the longest stretch, not of all 40.
        let pages = wal_pages(&dir);
        assert!(pages < 60, "the WAL was rewritten from its start: {pages} pages, not 40 commits' 120 or more");
        drop(writer);
    }
}
