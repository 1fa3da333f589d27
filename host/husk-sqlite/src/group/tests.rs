//! The group commit's own tests.

use std::sync::Arc;
use std::sync::mpsc::{Sender, channel};
use std::thread::JoinHandle;

use husk::store::StoreError;
use rusqlite::Connection;

use super::{Access, ErrorOf, Group, MAX_CALLS};

type Joined = JoinHandle<Result<(), StoreError>>;
type TestCall = Box<dyn FnOnce(&Connection) -> rusqlite::Result<()> + Send>;

/// A group on a fresh file with a table `t (v, parent)` (its foreign key
/// checked at commit), and a second connection to read what was
/// committed.
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
    let err: ErrorOf =
        Arc::new(|what, e| StoreError::Failed { store: "test".into(), message: format!("{what}: {e}"), cause: None });
    (Arc::new(Group::new(conn, "test-connection", err).unwrap()), Connection::open(&path).unwrap(), dir)
}

fn committed(reader: &Connection) -> Vec<i64> {
    let mut s = reader.prepare("SELECT v FROM t ORDER BY v").unwrap();
    s.query_map([], |r| r.get(0)).unwrap().collect::<rusqlite::Result<_>>().unwrap()
}

fn insert(conn: &Connection, v: i64, parent: Option<i64>) -> rusqlite::Result<()> {
    conn.execute("INSERT INTO t (v, parent) VALUES (?1, ?2)", rusqlite::params![v, parent]).map(|_| ())
}

fn spawn(group: &Arc<Group>, call: impl FnOnce(&Connection) -> rusqlite::Result<()> + Send + 'static) -> Joined {
    let group = group.clone();
    std::thread::spawn(move || group.run(Access::Write, "write", call))
}

/// Starts a call that holds the connection thread until the returned
/// sender sends; returns once it holds it.
fn holding(group: &Arc<Group>) -> (Joined, Sender<()>) {
    let (go, wait) = channel::<()>();
    let (entered, inside) = channel::<()>();
    let thread = spawn(group, move |conn| {
        insert(conn, 0, None)?;
        entered.send(()).unwrap();
        wait.recv().unwrap();
        Ok(())
    });
    inside.recv().unwrap();
    (thread, go)
}

/// Queues `calls` behind a call holding the connection thread (which
/// inserts 0), in order, then lets it go: the results, the holder's
/// first.
fn behind_one(group: &Arc<Group>, calls: Vec<TestCall>) -> Vec<Result<(), StoreError>> {
    let (first, go) = holding(group);
    let mut threads = vec![first];
    for (i, call) in calls.into_iter().enumerate() {
        threads.push(spawn(group, call));
        while group.queued() < i + 1 {
            std::thread::yield_now();
        }
    }
    go.send(()).unwrap();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn inserting(v: i64) -> TestCall {
    Box::new(move |conn| insert(conn, v, None))
}

#[test]
fn calls_queued_together_share_one_commit() {
    let (group, reader, _dir) = group();
    let results = behind_one(&group, (1..=3).map(inserting).collect());
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(committed(&reader), vec![0, 1, 2, 3]);
    assert_eq!(group.commits(), 2, "the holder alone, then the three queued behind it in one");
    // A call alone commits at once.
    group.run(Access::Write, "write", |conn| insert(conn, 4, None)).unwrap();
    assert_eq!(committed(&reader), vec![0, 1, 2, 3, 4]);
    assert_eq!(group.commits(), 3);
}

#[test]
fn a_failed_call_rolls_back_its_own_writes_only() {
    let (group, reader, _dir) = group();
    let failing = Box::new(|conn: &Connection| {
        insert(conn, 2, None)?;
        Err(rusqlite::Error::QueryReturnedNoRows)
    });
    let results = behind_one(&group, vec![inserting(1), failing, inserting(3)]);
    assert!(results[2].as_ref().is_err_and(|e| e.to_string().starts_with("test: write:")), "{results:?}");
    assert!([0, 1, 3].iter().all(|&i| results[i].is_ok()), "{results:?}");
    assert_eq!(committed(&reader), vec![0, 1, 3], "call 2's insert is rolled back, the others' committed");
    assert_eq!(group.commits(), 2);
}

#[test]
fn a_failed_commit_fails_every_call_in_it() {
    let (group, reader, _dir) = group();
    // The second call's row breaks a deferred foreign key: the commit fails.
    let breaking = Box::new(|conn: &Connection| insert(conn, 2, Some(99)));
    let results = behind_one(&group, vec![inserting(1), breaking]);
    assert!(results[0].is_ok(), "the holder committed alone: {results:?}");
    for result in &results[1..] {
        assert!(result.as_ref().is_err_and(|e| e.to_string().contains("commit")), "{results:?}");
    }
    assert_eq!(committed(&reader), vec![0], "nothing of the failed transaction is kept");
    group.run(Access::Write, "write", |conn| insert(conn, 5, None)).unwrap();
    assert_eq!(committed(&reader), vec![0, 5], "the connection is usable again");
}

#[test]
fn a_transaction_holds_at_most_its_share_of_calls() {
    let (group, reader, _dir) = group();
    let results = behind_one(&group, (1..=MAX_CALLS as i64 + 2).map(inserting).collect());
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(committed(&reader).len(), MAX_CALLS + 3);
    assert_eq!(group.commits(), 3, "the holder, then {MAX_CALLS}, then the last two");
}

#[test]
fn a_read_queued_with_a_write_whose_commit_fails_gets_the_committed_rows() {
    let (group, _reader, _dir) = group();
    let count = |conn: &Connection| conn.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0));
    assert_eq!(group.run(Access::Read, "count", count).unwrap(), 0);
    let (first, go) = holding(&group);
    // Queued before the read: its row breaks a deferred foreign key, so
    // its commit fails (as a write's does on a full disk).
    let breaking = spawn(&group, |conn| insert(conn, 1, Some(99)));
    while group.queued() < 1 {
        std::thread::yield_now();
    }
    let read = {
        let group = group.clone();
        std::thread::spawn(move || group.run(Access::Read, "count", count))
    };
    while group.queued() < 2 {
        std::thread::yield_now();
    }
    go.send(()).unwrap();
    assert!(first.join().unwrap().is_ok());
    assert!(breaking.join().unwrap().as_ref().is_err_and(|e| e.to_string().contains("commit")));
    // The holder's row, committed; never the failed write's.
    assert_eq!(read.join().unwrap().unwrap(), 1);
}

#[test]
fn a_call_that_panics_panics_its_caller_and_fails_the_calls_before_it_in_its_transaction() {
    let (group, reader, _dir) = group();
    let (first, go) = holding(&group);
    let before = spawn(&group, |conn| insert(conn, 1, None));
    while group.queued() < 1 {
        std::thread::yield_now();
    }
    let panicking = spawn(&group, |conn| {
        insert(conn, 2, None)?;
        panic!("a bug in a store call")
    });
    while group.queued() < 2 {
        std::thread::yield_now();
    }
    let after = spawn(&group, |conn| insert(conn, 3, None));
    while group.queued() < 3 {
        std::thread::yield_now();
    }
    go.send(()).unwrap();
    assert!(first.join().unwrap().is_ok());
    let panic = panicking.join().unwrap_err();
    assert_eq!(panic.downcast_ref::<&str>(), Some(&"a bug in a store call"), "the caller gets the call's panic");
    let before = before.join().unwrap();
    assert!(before.as_ref().is_err_and(|e| e.to_string().contains("panicked")), "{before:?}");
    // The call after the panicking one never ran in that transaction:
    // it ran in the next, and committed.
    assert!(after.join().unwrap().is_ok());
    assert_eq!(committed(&reader), vec![0, 3]);
}

#[test]
fn a_transaction_sqlite_rolled_back_by_itself_fails_every_call_in_it() {
    let (group, reader, _dir) = group();
    // The second call ends the transaction under the calls' feet, as
    // SQLite does on a full disk or an I/O error.
    let rolling_back = Box::new(|conn: &Connection| {
        insert(conn, 2, None)?;
        conn.execute_batch("ROLLBACK")
    });
    let results = behind_one(&group, vec![inserting(1), rolling_back]);
    assert!(results[0].is_ok());
    for result in &results[1..] {
        assert!(result.as_ref().is_err_and(|e| e.to_string().contains("rolled back")), "{results:?}");
    }
    assert_eq!(committed(&reader), vec![0]);
    group.run(Access::Write, "write", |conn| insert(conn, 3, None)).unwrap();
    assert_eq!(committed(&reader), vec![0, 3], "the connection is usable again");
}

#[test]
fn a_submitted_call_returns_at_once_and_hands_over_its_result_once_committed() {
    let (group, _reader, dir) = group();
    let (first, go) = holding(&group);
    let (sent, results) = channel();
    let path = dir.path().join("g.db");
    group.submit(
        Access::Write,
        "write",
        |conn| insert(conn, 1, None).map(|()| "inserted"),
        move |result| sent.send((result, committed(&Connection::open(path).unwrap()))).unwrap(),
    );
    // Back at once, though the connection thread is held.
    assert_eq!(group.queued(), 1);
    assert!(results.try_recv().is_err(), "no result before the call ran");
    go.send(()).unwrap();
    assert!(first.join().unwrap().is_ok());
    let (result, seen) = results.recv().unwrap();
    assert_eq!(result.unwrap(), "inserted");
    assert_eq!(seen, vec![0, 1], "the result comes after the commit holding the call's writes");
}

#[test]
fn a_submitted_call_that_panics_fails_its_result_and_the_thread_goes_on() {
    let (group, reader, _dir) = group();
    let (sent, results) = channel();
    group.submit(
        Access::Write,
        "write",
        |conn| {
            insert(conn, 1, None)?;
            panic!("a bug in a store call")
        },
        move |result: Result<(), StoreError>| sent.send(result).unwrap(),
    );
    let result = results.recv().unwrap();
    assert!(result.as_ref().is_err_and(|e| e.to_string().contains("panicked")), "{result:?}");
    group.run(Access::Write, "write", |conn| insert(conn, 2, None)).unwrap();
    assert_eq!(committed(&reader), vec![2], "the panicked call's write is rolled back; the next commits");
}

#[test]
fn dropping_the_group_ends_its_thread_and_closes_the_connection() {
    let (group, reader, dir) = group();
    group.run(Access::Write, "write", |conn| insert(conn, 1, None)).unwrap();
    drop(Arc::into_inner(group).expect("one owner"));
    // SQLite removes the WAL when the last connection to the file
    // closes: the reader's is the last only if the group's is closed.
    drop(reader);
    assert!(!dir.path().join("g.db-wal").exists(), "the connection thread's connection is closed");
}
