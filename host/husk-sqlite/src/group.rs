//! Group commit on one connection thread: the store's calls queue for the
//! thread that owns its one connection, which runs every call waiting in
//! one transaction and commits once for all of them.
//!
//! Every write the store makes is a transaction on one connection, and its
//! commit costs more than the statements of a small call: SQLite appends a
//! WAL frame for every page the transaction touched and updates the WAL
//! index (about 75 µs a commit under load on this project's VM, about
//! 5 µs per page). And a connection taken in turn by the calling threads
//! sat idle between them: each next holder had to be woken and scheduled,
//! on two cores shared with the workers' Wasm and the HTTP server.
//!
//! So the connection belongs to one thread. A call is queued to it and the
//! caller waits. The thread takes every call waiting (at most
//! [`MAX_CALLS`]), runs each in a savepoint of one transaction, commits,
//! and hands each caller its result; calls that arrived meanwhile make the
//! next transaction. A call alone is a transaction alone: nothing waits for
//! company.
//!
//! What each call sees is as if it had its own transaction:
//! - it returns only after the commit holding its writes is done, so its
//!   result is as durable as its own commit made it, and nothing it read
//!   can be rolled back after it returned;
//! - a call that fails rolls back its own savepoint, not the others' writes;
//! - a commit that fails (or a transaction SQLite rolled back by itself, on
//!   a full disk or an I/O error, or a call that panicked) fails every call
//!   that ran in it; calls of the batch that had not run yet go on in the
//!   next transaction;
//! - calls that only read run in a transaction of their own, before the
//!   batch's writes: a failing write (a full disk) fails no read, and a read
//!   sees only committed rows;
//! - a call that panics panics its caller, with the same payload.

use std::any::Any;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};
use rusqlite::Connection;

use husk::store::StoreError;

/// Most calls one transaction holds: bounds how long the first of them
/// waits for its commit.
pub(crate) const MAX_CALLS: usize = 64;

/// Turns a SQLite failure of a step (`what`) into the store's error.
pub(crate) type ErrorOf = Arc<dyn Fn(&str, &rusqlite::Error) -> StoreError + Send + Sync>;

/// Whether a call writes: one that only reads needs no savepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// The call may write.
    Write,
    /// The call only reads.
    Read,
}

/// The store's connection, on a thread of its own (see the module docs).
pub(crate) struct Group {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    err: ErrorOf,
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("commits", &self.commits()).finish_non_exhaustive()
    }
}

struct Shared {
    queue: Mutex<Queue>,
    arrived: Condvar,
    /// Transactions committed, for tests and diagnosis.
    commits: AtomicU64,
}

#[derive(Default)]
struct Queue {
    calls: VecDeque<Box<dyn Call>>,
    /// The store is dropped: the thread ends once the queue is empty.
    closed: bool,
}

/// A queued call, type-erased for the connection thread.
trait Call: Send {
    /// Whether the call may write.
    fn access(&self) -> Access;
    /// Runs the call in the open transaction.
    fn run(&mut self, conn: &Connection) -> Ran;
    /// Hands the caller its result, once the transaction it ran in ended
    /// (`ended`: how).
    fn finish(self: Box<Self>, ended: Result<(), StoreError>);
    /// Hands the caller the panic its call raised.
    fn panicked(self: Box<Self>, payload: Box<dyn Any + Send>);
}

/// How a call went in the shared transaction.
enum Ran {
    /// The call ran to its own result (kept until the commit); the
    /// transaction holds the calls before it intact (a failed call's
    /// savepoint was rolled back).
    Done,
    /// The transaction is gone or cannot be trusted: SQLite rolled it back
    /// by itself (a full disk, an I/O error), or a savepoint could not be
    /// made, released or rolled back.
    Broken(rusqlite::Error),
}

/// What a caller gets back.
enum Reply<R> {
    Value(Result<R, StoreError>),
    Panicked(Box<dyn Any + Send>),
}

struct Pending<R, F> {
    access: Access,
    what: &'static str,
    call: Option<F>,
    result: Option<Result<R, StoreError>>,
    /// Hands the caller its reply (called on the connection thread).
    reply: Box<dyn FnOnce(Reply<R>) + Send>,
    err: ErrorOf,
}

impl<R, F> Call for Pending<R, F>
where
    R: Send,
    F: FnOnce(&Connection) -> rusqlite::Result<R> + Send,
{
    fn access(&self) -> Access {
        self.access
    }

    fn run(&mut self, conn: &Connection) -> Ran {
        let call = self.call.take().expect("a call runs once");
        match in_savepoint(conn, self.access, call) {
            Ok(result) => {
                self.result = Some(result.map_err(|e| (self.err)(self.what, &e)));
                Ran::Done
            }
            Err(e) => Ran::Broken(e),
        }
    }

    fn finish(self: Box<Self>, ended: Result<(), StoreError>) {
        let result = match (ended, self.result) {
            (Ok(()), Some(result)) => result,
            (Err(e), _) => Err(e),
            (Ok(()), None) => Err((self.err)(self.what, &aborted("the call never ran"))),
        };
        (self.reply)(Reply::Value(result));
    }

    fn panicked(self: Box<Self>, payload: Box<dyn Any + Send>) {
        (self.reply)(Reply::Panicked(payload));
    }
}

impl Group {
    /// Moves `conn` to a thread of its own, named `name`; `err` names the
    /// store in its errors.
    ///
    /// # Errors
    ///
    /// The thread cannot be started.
    pub(crate) fn new(conn: Connection, name: &str, err: ErrorOf) -> std::io::Result<Self> {
        let shared = Arc::new(Shared { queue: Mutex::default(), arrived: Condvar::new(), commits: AtomicU64::new(0) });
        let thread = {
            let (shared, err) = (shared.clone(), err.clone());
            std::thread::Builder::new().name(name.to_owned()).spawn(move || serve(&conn, &shared, &err))?
        };
        Ok(Self { shared, thread: Some(thread), err })
    }

    /// Transactions committed so far.
    pub(crate) fn commits(&self) -> u64 {
        self.shared.commits.load(Ordering::Relaxed)
    }

    /// Runs `call` on the connection thread in the next transaction and
    /// returns its result once that transaction committed (see the module
    /// docs); `what` names the call in its errors. A panic of `call` panics
    /// this caller.
    pub(crate) fn run<R, F>(&self, access: Access, what: &'static str, call: F) -> Result<R, StoreError>
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        let (reply, answer) = sync_channel(1);
        // A caller that is gone (it cannot be: it waits) is no one to tell.
        self.queue(access, what, call, move |r| drop(reply.send(r)));
        match answer.recv() {
            Ok(Reply::Value(result)) => result,
            Ok(Reply::Panicked(payload)) => resume_unwind(payload),
            Err(_) => Err((self.err)(what, &aborted("the store's connection thread ended"))),
        }
    }

    /// Queues `call` as [`Group::run`] does, and returns at once: `done`
    /// gets its result on the connection thread, once the transaction it
    /// ran in ended. A panic of `call` is `done`'s error (saying so), not
    /// the caller's, who is not waiting.
    pub(crate) fn submit<R, F>(
        &self,
        access: Access,
        what: &'static str,
        call: F,
        done: impl FnOnce(Result<R, StoreError>) + Send + 'static,
    ) where
        R: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        let err = self.err.clone();
        self.queue(access, what, call, move |reply| match reply {
            Reply::Value(result) => done(result),
            Reply::Panicked(_) => done(Err(err(what, &aborted("the store call panicked")))),
        });
    }

    fn queue<R, F>(&self, access: Access, what: &'static str, call: F, reply: impl FnOnce(Reply<R>) + Send + 'static)
    where
        R: Send + 'static,
        F: FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        let reply = Box::new(reply);
        let pending = Pending { access, what, call: Some(call), result: None, reply, err: self.err.clone() };
        self.shared.queue.lock().calls.push_back(Box::new(pending));
        self.shared.arrived.notify_one();
    }

    #[cfg(test)]
    fn queued(&self) -> usize {
        self.shared.queue.lock().calls.len()
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.shared.queue.lock().closed = true;
        self.shared.arrived.notify_one();
        if let Some(thread) = self.thread.take() {
            // The thread runs what is still queued (submitted calls no one
            // waits for), then ends, and the connection is closed after it.
            let _ = thread.join();
        }
    }
}

/// The connection thread: one transaction for every batch of calls waiting.
fn serve(conn: &Connection, shared: &Shared, err: &ErrorOf) {
    loop {
        let batch: Vec<Box<dyn Call>> = {
            let mut queue = shared.queue.lock();
            while queue.calls.is_empty() && !queue.closed {
                shared.arrived.wait(&mut queue);
            }
            if queue.calls.is_empty() {
                return;
            }
            let n = queue.calls.len().min(MAX_CALLS);
            queue.calls.drain(..n).collect()
        };
        // Reads run in a transaction of their own, before the batch's
        // writes: a write that fails its commit (a full disk) fails no read,
        // and no read can see a write that is then rolled back. Reads alone
        // take no write lock (another process may hold it).
        let (reads, writes): (Vec<_>, Vec<_>) = batch.into_iter().partition(|call| call.access() == Access::Read);
        for (calls, begin) in [(reads, "BEGIN"), (writes, "BEGIN IMMEDIATE")] {
            if !calls.is_empty() {
                transaction(conn, shared, err, calls, begin);
            }
        }
    }
}

/// Runs `batch` in one transaction begun with `begin` and hands each call
/// its result (see the module docs).
fn transaction(conn: &Connection, shared: &Shared, err: &ErrorOf, batch: Vec<Box<dyn Call>>, begin: &str) {
    if let Err(e) = statement(conn, begin) {
        let failed = err("begin", &e);
        batch.into_iter().for_each(|call| call.finish(Err(failed.clone())));
        return;
    }
    let mut ran = Vec::with_capacity(batch.len());
    let mut broken = None;
    let mut calls = batch.into_iter();
    for mut call in calls.by_ref() {
        match catch_unwind(AssertUnwindSafe(|| call.run(conn))) {
            Ok(Ran::Done) => ran.push(call),
            Ok(Ran::Broken(e)) => {
                broken = Some(err("write", &e));
                ran.push(call);
                break;
            }
            Err(payload) => {
                broken = Some(err("write", &aborted("a store call panicked")));
                call.panicked(payload);
                break;
            }
        }
    }
    // Calls the broken transaction never ran go first in the next one.
    let unrun: Vec<_> = calls.collect();
    if !unrun.is_empty() {
        let mut queue = shared.queue.lock();
        for call in unrun.into_iter().rev() {
            queue.calls.push_front(call);
        }
    }
    let ended = match broken {
        Some(failed) => {
            roll_back(conn);
            Err(failed)
        }
        None => match statement(conn, "COMMIT") {
            Ok(()) => {
                shared.commits.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(e) => {
                roll_back(conn);
                Err(err("commit", &e))
            }
        },
    };
    ran.into_iter().for_each(|call| call.finish(ended.clone()));
}

/// Rolls back the open transaction, if SQLite has not already. Its calls
/// are failed by the caller; a rollback that fails leaves nothing more to do.
fn roll_back(conn: &Connection) {
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
}

/// Runs one prepared, cached statement.
fn statement(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql).and_then(|mut s| s.execute([])).map(drop)
}

/// An abort of a call or its transaction, saying why.
fn aborted(why: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT), Some(why.to_owned()))
}

/// Runs `call` in a savepoint of the open transaction (a read-only call
/// needs none): its own result, rolled back alone if it failed; or, as the
/// error, what broke the transaction.
fn in_savepoint<R>(
    conn: &Connection,
    access: Access,
    call: impl FnOnce(&Connection) -> rusqlite::Result<R>,
) -> rusqlite::Result<rusqlite::Result<R>> {
    if access == Access::Write {
        statement(conn, "SAVEPOINT call")?;
    }
    let result = call(conn);
    if conn.is_autocommit() {
        // Rolled back whole, the calls before this one with it.
        return Err(result.err().unwrap_or_else(|| aborted("the transaction was rolled back")));
    }
    if access == Access::Write {
        match &result {
            Ok(_) => statement(conn, "RELEASE call")?,
            Err(_) => {
                statement(conn, "ROLLBACK TO call")?;
                statement(conn, "RELEASE call")?;
            }
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests;
