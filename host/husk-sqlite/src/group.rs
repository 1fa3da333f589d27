//! Group commit: store calls that wait for the one connection share the
//! transaction of the call ahead of them, and one commit.
//!
//! Every write the store makes is a transaction on one connection, and its
//! commit costs more than the statements of a small call: SQLite appends a
//! WAL frame for every page the transaction touched and updates the WAL
//! index (about 40 µs a commit on this project's VM, against about 10 µs
//! for a one-job enqueue's statements). Under load, enqueues, claims and
//! reports queue for the connection and each paid its own commit.
//!
//! So a call does not commit while other calls wait for the connection: it
//! runs in a savepoint of the transaction open (opening one if none is),
//! and the call that no other call waits behind — or the
//! [`MAX_CALLS`]th of the transaction — commits for all of them. A call
//! alone commits at once: nothing waits for company.
//!
//! What each call sees is as before:
//! - a call returns only after the commit holding its writes is done, so
//!   its result is as durable as its own commit made it, and nothing it
//!   read can be rolled back after it returned;
//! - a call that fails rolls back its own savepoint, not the others' writes;
//! - a commit that fails (or a transaction SQLite rolled back by itself, on
//!   a full disk or an I/O error) fails every call in it, with that error.
//!
//! A read-only call made while no transaction is open runs on its own,
//! outside any; one made while a transaction is open joins it, and returns
//! once it is committed.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Condvar, Mutex};
use rusqlite::Connection;

use husk::store::StoreError;

/// Most calls one transaction holds before it commits even with calls
/// waiting: bounds how long the first of them waits for its commit.
pub(crate) const MAX_CALLS: usize = 64;

/// The one connection of a store, and its open transaction (see the module
/// docs).
#[derive(Debug)]
pub(crate) struct Group {
    open: Mutex<Open>,
    /// Calls waiting for the connection.
    queued: AtomicUsize,
    /// Transactions committed, for tests and diagnosis.
    commits: AtomicU64,
}

#[derive(Debug)]
struct Open {
    conn: Connection,
    /// The transaction open now, and how many calls ran in it.
    txn: Option<(Arc<Txn>, usize)>,
}

/// One shared transaction: how it ended, once it has.
#[derive(Debug, Default)]
struct Txn {
    ended: Mutex<Option<Result<(), StoreError>>>,
    changed: Condvar,
}

impl Txn {
    fn end(&self, result: Result<(), StoreError>) {
        *self.ended.lock() = Some(result);
        self.changed.notify_all();
    }

    fn wait(&self) -> Result<(), StoreError> {
        let mut ended = self.ended.lock();
        loop {
            if let Some(result) = ended.as_ref() {
                return result.clone();
            }
            self.changed.wait(&mut ended);
        }
    }
}

/// Whether a call writes: one that does not, made with no transaction open,
/// runs outside any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// The call may write.
    Write,
    /// The call only reads.
    Read,
}

impl Group {
    /// `conn`, with no transaction open.
    pub(crate) fn new(conn: Connection) -> Self {
        Self { open: Mutex::new(Open { conn, txn: None }), queued: AtomicUsize::new(0), commits: AtomicU64::new(0) }
    }

    /// Transactions committed so far.
    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Runs `call` on the connection (see the module docs); `err` turns a
    /// SQLite failure, and what failed, into the store's error.
    pub(crate) fn run<R>(
        &self,
        access: Access,
        call: impl FnOnce(&Connection) -> rusqlite::Result<R>,
        err: impl Fn(&str, rusqlite::Error) -> StoreError,
    ) -> Result<R, StoreError> {
        self.queued.fetch_add(1, Ordering::SeqCst);
        let mut open = self.open.lock();
        self.queued.fetch_sub(1, Ordering::SeqCst);
        if access == Access::Read && open.txn.is_none() {
            return call(&open.conn).map_err(|e| err("read", e));
        }
        let (txn, calls) = match open.txn.take() {
            Some(txn) => txn,
            None => {
                open.conn
                    .prepare_cached("BEGIN IMMEDIATE")
                    .and_then(|mut s| s.execute([]))
                    .map_err(|e| err("begin", e))?;
                (Arc::new(Txn::default()), 0)
            }
        };
        let ran = match catch_unwind(AssertUnwindSafe(|| in_savepoint(&open.conn, access, call))) {
            Ok(ran) => ran,
            Err(panic) => {
                let failed = err("write", aborted("a store call panicked"));
                Self::abandon(&open.conn, &txn, failed);
                drop(open);
                resume_unwind(panic);
            }
        };
        let step = match access {
            Access::Write => "write",
            Access::Read => "read",
        };
        let result = match ran {
            Ran::Done(result) => result.map_err(|e| err(step, e)),
            Ran::Broken(e) => {
                // Every call in the transaction failed with it.
                let failed = err(step, e);
                Self::abandon(&open.conn, &txn, failed.clone());
                return Err(failed);
            }
        };
        let calls = calls + 1;
        if self.queued.load(Ordering::SeqCst) > 0 && calls < MAX_CALLS {
            // A waiting call goes on with the transaction and ends it.
            open.txn = Some((txn.clone(), calls));
            drop(open);
            let value = result?;
            txn.wait()?;
            return Ok(value);
        }
        let committed =
            open.conn.prepare_cached("COMMIT").and_then(|mut s| s.execute([])).map_err(|e| err("commit", e));
        if committed.is_ok() {
            self.commits.fetch_add(1, Ordering::Relaxed);
        } else if !open.conn.is_autocommit() {
            let _ = open.conn.execute_batch("ROLLBACK");
        }
        drop(open);
        txn.end(committed.as_ref().map(|_| ()).map_err(Clone::clone));
        committed?;
        result
    }

    /// Rolls back the open transaction after a call panicked or broke it,
    /// failing the calls that ran in it with `failed`.
    fn abandon(conn: &Connection, txn: &Txn, failed: StoreError) {
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        txn.end(Err(failed));
    }
}

/// An abort of the shared transaction, saying why.
fn aborted(why: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT), Some(why.to_owned()))
}

/// How a call went in the shared transaction.
enum Ran<R> {
    /// The call's own result; the transaction holds the calls before it
    /// intact (a failed call's savepoint was rolled back).
    Done(rusqlite::Result<R>),
    /// The transaction is gone or cannot be trusted: SQLite rolled it back
    /// by itself (a full disk, an I/O error), or a savepoint could not be
    /// made, released or rolled back.
    Broken(rusqlite::Error),
}

/// Runs `call` in a savepoint of the open transaction (a read-only call
/// needs none): rolled back alone if it fails.
fn in_savepoint<R>(conn: &Connection, access: Access, call: impl FnOnce(&Connection) -> rusqlite::Result<R>) -> Ran<R> {
    let statement = |sql: &str| conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map(drop);
    if access == Access::Write
        && let Err(e) = statement("SAVEPOINT call")
    {
        return Ran::Broken(e);
    }
    let result = call(conn);
    if conn.is_autocommit() {
        // Rolled back whole, the calls before this one with it.
        return Ran::Broken(result.err().unwrap_or_else(|| aborted("the transaction was rolled back")));
    }
    if access == Access::Read {
        return Ran::Done(result);
    }
    let ended = match &result {
        Ok(_) => statement("RELEASE call"),
        Err(_) => statement("ROLLBACK TO call").and_then(|()| statement("RELEASE call")),
    };
    match ended {
        Ok(()) => Ran::Done(result),
        Err(e) => Ran::Broken(e),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use husk::store::StoreError;
    use rusqlite::Connection;

    use super::{Access, Group, MAX_CALLS};

    fn err(what: &str, e: rusqlite::Error) -> StoreError {
        StoreError::Failed { store: "test".into(), message: format!("{what}: {e}") }
    }

    /// A group on a fresh file with a table `t (v)`, and a second
    /// connection to read what was committed.
    fn group() -> (Arc<Group>, Connection, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;
             CREATE TABLE parent (id INTEGER PRIMARY KEY);
             CREATE TABLE t (v INTEGER, parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);",
        )
        .unwrap();
        (Arc::new(Group::new(conn)), Connection::open(&path).unwrap(), dir)
    }

    fn committed(reader: &Connection) -> Vec<i64> {
        let mut s = reader.prepare("SELECT v FROM t ORDER BY v").unwrap();
        s.query_map([], |r| r.get(0)).unwrap().collect::<rusqlite::Result<_>>().unwrap()
    }

    fn insert(conn: &Connection, v: i64, parent: Option<i64>) -> rusqlite::Result<()> {
        conn.execute("INSERT INTO t (v, parent) VALUES (?1, ?2)", rusqlite::params![v, parent]).map(|_| ())
    }

    /// Starts a write call that runs `call`, then holds the connection
    /// until the returned sender sends; returns once it holds it.
    fn holding(
        group: &Arc<Group>,
        call: impl FnOnce(&Connection) -> rusqlite::Result<()> + Send + 'static,
    ) -> (std::thread::JoinHandle<Result<(), StoreError>>, std::sync::mpsc::Sender<()>) {
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let (entered, inside) = std::sync::mpsc::channel::<()>();
        let group = group.clone();
        let thread = std::thread::spawn(move || {
            group.run(
                Access::Write,
                |conn| {
                    let result = call(conn);
                    entered.send(()).unwrap();
                    wait.recv().unwrap();
                    result
                },
                err,
            )
        });
        inside.recv().unwrap();
        (thread, go)
    }

    /// Runs a first call that holds the connection until `others` calls
    /// wait for it, then those calls; returns each call's result, the
    /// first's first. Call `i` inserts `i`; `fail(i)` says how it fails:
    /// `Some(true)` with an error after its insert, `Some(false)` with a
    /// row the deferred foreign key refuses only at commit.
    fn run_together(
        group: &Arc<Group>,
        others: usize,
        fail: impl Fn(usize) -> Option<bool> + Send + Sync + Copy + 'static,
    ) -> Vec<Result<(), StoreError>> {
        let call = move |i: usize| {
            move |conn: &Connection| {
                insert(conn, i as i64, (fail(i) == Some(false)).then_some(99))?;
                match fail(i) {
                    Some(true) => Err(rusqlite::Error::QueryReturnedNoRows),
                    _ => Ok(()),
                }
            }
        };
        let (first, go) = holding(group, call(0));
        let rest: Vec<_> = (1..=others)
            .map(|i| {
                let shared = group.clone();
                let thread = std::thread::spawn(move || shared.run(Access::Write, call(i), err));
                // In order: each waits before the next is started.
                while group.queued.load(Ordering::SeqCst) < i {
                    std::thread::yield_now();
                }
                thread
            })
            .collect();
        go.send(()).unwrap();
        std::iter::once(first).chain(rest).map(|t| t.join().unwrap()).collect()
    }

    #[test]
    fn calls_waiting_for_the_connection_share_one_commit() {
        let (group, reader, _dir) = group();
        let results = run_together(&group, 3, |_| None);
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert_eq!(committed(&reader), vec![0, 1, 2, 3]);
        assert_eq!(group.commits(), 1, "four calls, one commit");
        // A call alone commits at once.
        group.run(Access::Write, |conn| insert(conn, 4, None), err).unwrap();
        assert_eq!(committed(&reader), vec![0, 1, 2, 3, 4]);
        assert_eq!(group.commits(), 2);
    }

    #[test]
    fn a_failed_call_rolls_back_its_own_writes_only() {
        let (group, reader, _dir) = group();
        let results = run_together(&group, 2, |i| (i == 1).then_some(true));
        assert!(results[0].is_ok() && results[2].is_ok(), "{results:?}");
        assert!(results[1].is_err(), "{results:?}");
        assert_eq!(committed(&reader), vec![0, 2], "call 1's insert is rolled back, the others' committed");
        assert_eq!(group.commits(), 1);
    }

    #[test]
    fn a_failed_commit_fails_every_call_in_it() {
        let (group, reader, _dir) = group();
        // Call 2's row breaks a deferred foreign key: the commit fails.
        let results = run_together(&group, 2, |i| (i == 2).then_some(false));
        assert!(results.iter().all(Result::is_err), "{results:?}");
        for result in &results {
            assert!(result.as_ref().unwrap_err().to_string().contains("commit"), "{results:?}");
        }
        assert_eq!(committed(&reader), Vec::<i64>::new(), "nothing of the failed transaction is kept");
        // The connection is usable again.
        group.run(Access::Write, |conn| insert(conn, 5, None), err).unwrap();
        assert_eq!(committed(&reader), vec![5]);
    }

    #[test]
    fn a_transaction_commits_after_its_last_allowed_call_even_with_calls_waiting() {
        let (group, reader, _dir) = group();
        let results = run_together(&group, MAX_CALLS + 2, |_| None);
        assert!(results.iter().all(Result::is_ok), "{results:?}");
        assert_eq!(committed(&reader).len(), MAX_CALLS + 3);
        assert_eq!(group.commits(), 2, "{} calls took two transactions", MAX_CALLS + 3);
    }

    #[test]
    fn a_read_alone_runs_outside_any_transaction_and_one_made_meanwhile_waits_for_the_commit() {
        let (group, _reader, _dir) = group();
        let count = |conn: &Connection| conn.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0));
        assert_eq!(group.run(Access::Read, count, err).unwrap(), 0);
        assert_eq!(group.commits(), 0, "a read alone commits nothing");
        // A read joining a transaction that then fails gets the failure,
        // not the rows it saw.
        let (writer, go) = holding(&group, |conn| insert(conn, 1, Some(99)));
        let read = {
            let group = group.clone();
            std::thread::spawn(move || group.run(Access::Read, count, err))
        };
        while group.queued.load(Ordering::SeqCst) < 1 {
            std::thread::yield_now();
        }
        go.send(()).unwrap();
        assert!(writer.join().unwrap().is_err());
        let read = read.join().unwrap();
        assert!(read.as_ref().is_err_and(|e| e.to_string().contains("commit")), "{read:?}");
    }

    #[test]
    fn a_call_that_panics_fails_the_calls_sharing_its_transaction_and_leaves_the_connection_usable() {
        let (group, reader, _dir) = group();
        // Call 0 holds the connection while call 1 queues behind it.
        let (first, go) = holding(&group, |conn| insert(conn, 0, None));
        let (entered, inside) = std::sync::mpsc::channel::<()>();
        let panicking = {
            let group = group.clone();
            std::thread::spawn(move || {
                group.run::<()>(
                    Access::Write,
                    |conn| {
                        insert(conn, 1, None)?;
                        entered.send(()).unwrap();
                        // Panics once call 2 waits behind it.
                        while group.queued.load(Ordering::SeqCst) == 0 {
                            std::thread::yield_now();
                        }
                        panic!("a bug in a store call")
                    },
                    err,
                )
            })
        };
        while group.queued.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        // Call 0 ends and leaves its transaction to call 1.
        go.send(()).unwrap();
        inside.recv().unwrap();
        let last = group.run(Access::Write, |conn| insert(conn, 2, None), err);
        assert!(panicking.join().is_err(), "the panic reaches its caller");
        let first = first.join().unwrap();
        assert!(first.as_ref().is_err_and(|e| e.to_string().contains("panicked")), "{first:?}");
        // Call 2 ran in a transaction of its own and committed.
        assert!(last.is_ok(), "{last:?}");
        assert_eq!(committed(&reader), vec![2], "the panicking call's transaction was rolled back");
        assert_eq!(group.commits(), 1);
    }

    #[test]
    fn a_transaction_sqlite_rolled_back_by_itself_fails_every_call_in_it() {
        let (group, reader, _dir) = group();
        // Call 1 ends the transaction under the calls' feet, as SQLite does
        // on a full disk or an I/O error.
        let (first, go) = holding(&group, |conn| insert(conn, 0, None));
        let second = {
            let group = group.clone();
            std::thread::spawn(move || {
                group.run(
                    Access::Write,
                    |conn| {
                        insert(conn, 1, None)?;
                        conn.execute_batch("ROLLBACK")
                    },
                    err,
                )
            })
        };
        while group.queued.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        go.send(()).unwrap();
        let (first, second) = (first.join().unwrap(), second.join().unwrap());
        assert!(second.as_ref().is_err_and(|e| e.to_string().contains("rolled back")), "{second:?}");
        assert!(first.as_ref().is_err_and(|e| e.to_string().contains("rolled back")), "{first:?}");
        assert_eq!(committed(&reader), Vec::<i64>::new());
        group.run(Access::Write, |conn| insert(conn, 2, None), err).unwrap();
        assert_eq!(committed(&reader), vec![2], "the connection is usable again");
    }
}
