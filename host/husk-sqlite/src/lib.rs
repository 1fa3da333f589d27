//! The SQLite job store: one file, WAL, migrations at open. The embedded,
//! durable default.
//!
//! Durability: every enqueue, claim, report and cancel is committed before
//! the call returns, in a transaction of its own or shared with the calls
//! queued meanwhile (group commit, see `group`). With `synchronous = NORMAL`
//! (the default here) a committed transaction survives the process being killed
//! (`kill -9`): it is in the WAL, in the operating system's page cache. A
//! power loss can lose the transactions committed since the last WAL sync
//! (checkpoint). [`Durability::Full`] syncs the WAL on every commit and
//! survives power loss, at the cost of one `fsync` per transaction.
//!
//! Throughput comes from batching: a worker claims up to `max` jobs and
//! reports a batch of decisions in one transaction each.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use rusqlite::{Connection, TransactionBehavior, params};

mod checkpoint;
mod group;
mod migrations;
mod rows;
mod supports;

use checkpoint::{Checkpointer, MARKS};
use group::{Access, Group};

use migrations::MIGRATIONS;
use rows::{Arm, arm, end, from_json, get_record, keyed_job, live_row, outcome_row, reclaim_expired};

use husk::outcome::{Outcome, TerminalOutcome};
use husk::store::sql::{OUTCOME_COLUMNS, RUNNING, SCHEMA_VERSION, armed_state, depths_of, millis, time, to_json};
use husk::store::{Behaviour, Cause, Supports};
use husk::store::{
    CancelResult, Depth, EnqueueDone, Enqueued, FetchRequest, Fetched, JobId, JobRecord, JobStore, Lock, LockedJob,
    NewJob, Report, Reported, StoreError,
};

/// Prepared statements kept per connection (see [`SqliteStore::open`]).
const STATEMENT_CACHE: usize = 64;

// A `LIMIT` is written `LIMIT (SELECT ?n)`, never `LIMIT ?n`: SQLite's
// planner reads a bare bound limit's value, so every new binding of it
// expires the prepared statement and the next step parses and plans it
// again (a fetch spent a quarter of its time there). A subquery's value is
// not read at planning, and the cached statement stays prepared.

// Likewise `topic = CAST(?4 AS TEXT)`, not `topic = ?4`: in this claim the
// planner marks the bare `?4` as one whose value it read, and rusqlite, when
// it puts a statement back in its cache, clears its bindings, which expires
// such a statement: each claim was parsed and planned again (about 100 µs,
// a fifth of the connection's time under load). The plan is the same.

/// Locks up to `?5` ready jobs of topic `?4` for worker `?1` with token
/// `?2` until `?3`.
const CLAIM: &str = "UPDATE jobs SET state = 2, lock_worker = ?1, lock_token = ?2, lock_expires_at = ?3
     WHERE id IN (SELECT id FROM jobs WHERE topic = CAST(?4 AS TEXT) AND state = 0
                  ORDER BY priority DESC, id LIMIT (SELECT ?5))
     RETURNING id, input, attempt, policy, enqueued_at, priority";

/// How hard a commit tries to reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// `synchronous = NORMAL`: survives a process crash, not a power loss.
    #[default]
    Normal,
    /// `synchronous = FULL`: every commit synced; survives a power loss.
    Full,
}

/// The SQLite [`JobStore`].
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    /// The one connection, on a thread of its own (see `group`). Dropped
    /// before the checkpointer, whose thread its commits may wait for.
    group: Group,
    /// Runs the WAL's checkpoints (see `checkpoint`); held for its thread,
    /// which its drop ends.
    _checkpointer: Checkpointer,
}

/// A SQLite failure of `what` on `store`, of the kind a caller can act on.
fn store_error(store: &str, what: &str, error: &rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::{
        CannotOpen, ConstraintViolation, DatabaseBusy, DatabaseCorrupt, DatabaseLocked, DiskFull, NotADatabase,
        OutOfMemory, PermissionDenied, ReadOnly, SystemIoFailure,
    };
    let (store, message) = (store.to_owned(), format!("{what}: {error}"));
    match error {
        rusqlite::Error::SqliteFailure(failure, detail) => {
            // The database's own failure, kept as the cause (a copy: the
            // same error may fail every call of one group commit).
            let cause: Option<Cause> = Some(Arc::new(rusqlite::Error::SqliteFailure(*failure, detail.clone())));
            match failure.code {
                DatabaseBusy | DatabaseLocked | CannotOpen | DiskFull | SystemIoFailure | ReadOnly
                | PermissionDenied | OutOfMemory => StoreError::Unavailable { store, message, cause },
                DatabaseCorrupt | NotADatabase => StoreError::Corrupt { store, message, cause },
                ConstraintViolation => StoreError::Conflict { store, message, cause },
                _ => StoreError::Failed { store, message, cause },
            }
        }
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::Utf8Error(..) => StoreError::Corrupt { store, message, cause: None },
        _ => StoreError::Failed { store, message, cause: None },
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` and applies the
    /// schema migrations.
    ///
    /// # Errors
    ///
    /// A one-line [`StoreError`] naming the file: it cannot be opened or
    /// written, is not a database, or was written by a newer husk. Nothing
    /// is changed then.
    pub fn open(path: &Path, durability: Durability) -> Result<Self, StoreError> {
        let store = format!("SQLite store {}", path.display());
        let fail = |what: &str, e: &rusqlite::Error| store_error(&store, what, e);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| StoreError::Unavailable {
                store: store.clone(),
                message: format!("cannot create its directory: {e}"),
                cause: None,
            })?;
        }
        let mut conn = Connection::open(path).map_err(|e| fail("cannot open", &e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(|e| fail("cannot configure", &e))?;
        // Room for every statement the store prepares (about 40): with
        // rusqlite's default of 16, the enqueue, claim and report paths
        // together cycle through more than the cache holds, and an LRU cache
        // cycled past its size parses every statement again.
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        let version: i64 =
            conn.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(|e| fail("not a husk database", &e))?;
        let newer = |version: i64| StoreError::NewerSchema { store: store.clone(), version, known: SCHEMA_VERSION };
        if version > SCHEMA_VERSION {
            return Err(newer(version));
        }
        let sync = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        // Calls sharing a transaction each run in a savepoint (see `group`),
        // whose undo journal would otherwise be a temporary file made and
        // removed per transaction.
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = {sync}; PRAGMA temp_store = MEMORY;"
        ))
        .map_err(|e| fail("cannot enable WAL", &e))?;
        let tx =
            conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| fail("cannot write", &e))?;
        // Read again under the write lock: another process opening the same
        // file may have migrated it meanwhile.
        let version: i64 =
            tx.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(|e| fail("not a husk database", &e))?;
        if version > SCHEMA_VERSION {
            return Err(newer(version));
        }
        for (i, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(migration).map_err(|e| fail(&format!("migration {}", i + 1), &e))?;
        }
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
            .map_err(|e| fail("cannot record the schema version", &e))?;
        tx.commit().map_err(|e| fail("cannot write", &e))?;
        let checkpoints = Connection::open(path).map_err(|e| fail("cannot open", &e))?;
        // Reading the journal mode has it learn the file is in WAL mode.
        checkpoints
            .execute_batch(&format!("PRAGMA synchronous = {sync}"))
            .and_then(|()| checkpoints.query_row("PRAGMA journal_mode", [], |_| Ok(())))
            .map_err(|e| fail("cannot configure", &e))?;
        let checkpointer =
            Checkpointer::start(checkpoints, "husk-sqlite-ckpt").map_err(|e| StoreError::Unavailable {
                store: store.clone(),
                message: format!("cannot start its checkpointer: {e}"),
                cause: None,
            })?;
        checkpointer.take_over(&mut conn, MARKS).map_err(|e| fail("cannot configure", &e))?;
        let name = store.clone();
        let group =
            Group::new(conn, "husk-sqlite", Arc::new(move |what, e| store_error(&name, what, e))).map_err(|e| {
                StoreError::Unavailable {
                    store,
                    message: format!("cannot start its connection thread: {e}"),
                    cause: None,
                }
            })?;
        Ok(Self { path: path.to_owned(), group, _checkpointer: checkpointer })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs a call that may write, in the next transaction of the
    /// connection thread (see `group`).
    fn write<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.group.run(Access::Write, "write", f)
    }

    /// Runs a read-only call, `what`.
    fn read<R: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<R> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.group.run(Access::Read, what, f)
    }
}

impl JobStore for SqliteStore {
    /// Its connection thread commits every call waiting in one
    /// transaction, and enqueues return before it has.
    fn behaviour(&self) -> Behaviour {
        Behaviour { commits_in_groups: true, enqueues_in_background: true, ..Behaviour::default() }
    }

    fn supports(&self) -> Supports<'_> {
        Supports::all_but_sharing(self)
    }

    fn enqueue(&self, jobs: Vec<NewJob>, now: SystemTime) -> Result<Vec<Enqueued>, StoreError> {
        self.write(move |tx| insert_jobs(tx, &jobs, now))
    }

    fn enqueue_then(&self, jobs: Vec<NewJob>, now: SystemTime, done: EnqueueDone) {
        self.group.submit(Access::Write, "write", move |tx| insert_jobs(tx, &jobs, now), done);
    }

    fn fetch_and_lock(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError> {
        let (worker, topics) = (request.worker.to_owned(), request.topics.to_vec());
        let (max, lock_duration) = (request.max, request.lock_duration);
        self.write(move |tx| {
            let mut fetched = Fetched::default();
            let now_ms = millis(now);
            tx.prepare_cached("UPDATE jobs SET state = 0, not_before = NULL WHERE state = 1 AND not_before <= ?1")?
                .execute([now_ms])?;
            reclaim_expired(tx, now, &mut fetched.ended)?;
            let expires_at = now + lock_duration;
            let mut remaining = max;
            let paused = tx
                .prepare_cached("SELECT topic FROM paused")?
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            for topic in &topics {
                if remaining == 0 {
                    break;
                }
                if paused.contains(topic) {
                    continue;
                }
                // The counter's next value, written back only when the claim
                // took a job: a fetch that finds nothing (most of them under
                // single enqueues) writes no page. No other writer runs
                // between the read and the write: the transaction holds
                // the file's write lock, and a rolled-back call rolls both
                // back.
                let token: i64 = tx
                    .prepare_cached("SELECT value + 1 FROM meta WHERE key = 'next_token'")?
                    .query_row([], |r| r.get(0))?;
                let mut claim = tx.prepare_cached(CLAIM)?;
                let claimed = claim
                    .query_map(params![worker, token, millis(expires_at), topic, remaining as i64], |r| {
                        let policy: String = r.get(3)?;
                        Ok(LockedJob {
                            lock: Lock { job: JobId(r.get::<_, i64>(0)? as u64), token: token as u64 },
                            topic: topic.clone(),
                            input: r.get(1)?,
                            attempt: r.get::<_, i64>(2)? as u32,
                            policy: from_json(&policy)?,
                            enqueued_at: time(r.get(4)?),
                            lock_expires_at: expires_at,
                            priority: r.get(5)?,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                if !claimed.is_empty() {
                    tx.prepare_cached("UPDATE meta SET value = ?1 WHERE key = 'next_token'")?.execute([token])?;
                }
                remaining -= claimed.len();
                fetched.jobs.extend(claimed);
            }
            fetched.jobs.sort_by_key(|j| (std::cmp::Reverse(j.priority), j.lock.job));
            // Every fetch asks: prepared once per connection, not parsed each time.
            let gate: Option<i64> =
                tx.prepare_cached("SELECT min(not_before) FROM jobs WHERE state = 1")?.query_row([], |r| r.get(0))?;
            let lock: Option<i64> = tx
                .prepare_cached("SELECT min(lock_expires_at) FROM jobs WHERE state = 2")?
                .query_row([], |r| r.get(0))?;
            fetched.next_wake = gate.into_iter().chain(lock).min().map(time);
            fetched.paused = !topics.is_empty() && topics.iter().all(|t| paused.contains(t));
            Ok(fetched)
        })
    }

    fn report(&self, reports: Vec<(Lock, Report)>, now: SystemTime) -> Result<Vec<Reported>, StoreError> {
        self.write(move |tx| {
            reports
                .into_iter()
                .map(|(lock, report)| {
                    let Some(job) = live_row(tx, lock.job.0 as i64)? else { return Ok(Reported::LockLost) };
                    if !job.held(lock, now) {
                        return Ok(Reported::LockLost);
                    }
                    let spent = report.attempt_record(job.attempt as u32, now);
                    let spent = spent.as_ref();
                    if job.cancel_requested {
                        return Ok(Reported::Ended(Box::new(end(tx, &job, Outcome::Cancelled, spent, now)?)));
                    }
                    Ok(match report {
                        Report::Completed { output, .. } => {
                            Reported::Ended(Box::new(end(tx, &job, Outcome::Completed { output }, spent, now)?))
                        }
                        Report::End { outcome, .. } => Reported::Ended(Box::new(end(tx, &job, outcome, spent, now)?)),
                        Report::ReArm { fault, not_before, .. } => {
                            let fault = to_json(&fault);
                            let (id, attempt, gate) = (job.id, job.attempt + 1, Some(not_before));
                            arm(tx, Arm { id, attempt, fault: Some(&fault), gate, spent }, now)?;
                            Reported::ReArmed
                        }
                        Report::Release => {
                            let unspent =
                                Arm { id: job.id, attempt: job.attempt, fault: None, gate: None, spent: None };
                            arm(tx, unspent, now)?;
                            Reported::Released
                        }
                    })
                })
                .collect()
        })
    }

    fn extend_lock(&self, lock: Lock, until: SystemTime, now: SystemTime) -> Result<bool, StoreError> {
        self.write(move |tx| {
            let Some(job) = live_row(tx, lock.job.0 as i64)? else { return Ok(false) };
            if !job.held(lock, now) {
                return Ok(false);
            }
            tx.prepare_cached("UPDATE jobs SET lock_expires_at = ?2 WHERE id = ?1")?
                .execute(params![job.id, millis(until)])?;
            Ok(true)
        })
    }

    fn cancel(&self, id: JobId, now: SystemTime) -> Result<CancelResult, StoreError> {
        self.write(move |tx| {
            let Some(job) = live_row(tx, id.0 as i64)? else {
                let ended: bool =
                    tx.query_row("SELECT EXISTS (SELECT 1 FROM outcomes WHERE job_id = ?1)", [id.0 as i64], |r| {
                        r.get(0)
                    })?;
                return Ok(if ended { CancelResult::AlreadyEnded } else { CancelResult::NotFound });
            };
            if job.state == RUNNING {
                tx.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?1", [job.id])?;
                return Ok(CancelResult::Cancelling);
            }
            Ok(CancelResult::Cancelled(Box::new(end(tx, &job, Outcome::Cancelled, None, now)?)))
        })
    }

    fn get(&self, id: JobId) -> Result<Option<JobRecord>, StoreError> {
        self.read("get", move |conn| get_record(conn, id.0 as i64, true))
    }

    fn outcomes_after(&self, after: u64, limit: usize) -> Result<Vec<TerminalOutcome>, StoreError> {
        self.read("outcomes", move |conn| {
            conn.prepare_cached(&format!(
                "SELECT {OUTCOME_COLUMNS} FROM outcomes WHERE seq > ?1 ORDER BY seq LIMIT (SELECT ?2)"
            ))
            .and_then(|mut s| {
                s.query_map(params![after as i64, limit as i64], |r| outcome_row(r).map(|row| row.outcome))?.collect()
            })
        })
    }

    fn outcome_head(&self) -> Result<u64, StoreError> {
        let head: i64 = self.read("outcome head", move |conn| {
            conn.prepare_cached("SELECT coalesce(max(seq), 0) FROM outcomes")
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
        })?;
        Ok(head as u64)
    }

    fn depths(&self) -> Result<Vec<(String, Depth)>, StoreError> {
        let rows: Vec<(String, i64, i64)> = self.read("depths", move |conn| {
            conn.prepare_cached("SELECT topic, state, count(*) FROM jobs GROUP BY topic, state ORDER BY topic")
                .and_then(|mut s| s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect())
        })?;
        Ok(depths_of(rows))
    }
}

/// Writes `jobs` in the open write transaction, which is exclusive
/// (IMMEDIATE): no other enqueue can take a key between the look-up and the
/// insert.
fn insert_jobs(tx: &Connection, jobs: &[NewJob], now: SystemTime) -> rusqlite::Result<Vec<Enqueued>> {
    let mut insert = tx.prepare_cached(
        "INSERT INTO jobs (topic, input, policy, attempt, state, not_before, enqueued_at, keep_input, priority)
         VALUES (?1, ?2, ?3, 1, ?4, ?5, ?6, ?7, ?8)",
    )?;
    jobs.iter()
        .map(|job| {
            if let Some(id) = job.key.as_deref().map(|key| keyed_job(tx, key)).transpose()?.flatten() {
                return Ok(Enqueued { id, created: false });
            }
            let (state, not_before) = armed_state(job.not_before, now);
            let policy = to_json(&job.policy);
            let (keep, priority) = (job.keep_input, job.priority);
            insert.execute(params![job.topic, job.input, policy, state, not_before, millis(now), keep, priority])?;
            let id = tx.last_insert_rowid();
            if let Some(key) = &job.key {
                tx.prepare_cached("INSERT INTO keys (key, job_id) VALUES (?1, ?2)")?.execute(params![key, id])?;
            }
            Ok(Enqueued { id: JobId(id as u64), created: true })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use husk::store::StoreError;

    use super::{Durability, SqliteStore};

    #[test]
    fn open_tells_a_file_that_is_no_database_from_one_a_newer_husk_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.db");
        std::fs::write(&garbage, vec![0x5a; 8192]).unwrap();
        let error = SqliteStore::open(&garbage, Durability::Normal).map(|_| ()).unwrap_err();
        assert!(matches!(error, StoreError::Corrupt { .. }) && !error.is_retryable(), "{error:?}");
        assert!(error.to_string().contains(&garbage.display().to_string()), "{error}");
        let cause = error.cause().expect("SQLite's own error, kept as the cause");
        let sqlite = cause.downcast_ref::<rusqlite::Error>().expect("a rusqlite::Error");
        assert_eq!(sqlite.sqlite_error_code(), Some(rusqlite::ErrorCode::NotADatabase));

        let newer = dir.path().join("newer.db");
        rusqlite::Connection::open(&newer).unwrap().execute_batch("PRAGMA user_version = 99").unwrap();
        let error = SqliteStore::open(&newer, Durability::Normal).map(|_| ()).unwrap_err();
        assert!(matches!(error, StoreError::NewerSchema { version: 99, .. }), "{error:?}");

        let unreachable = garbage.join("under-a-file.db");
        let error = SqliteStore::open(&unreachable, Durability::Normal).map(|_| ()).unwrap_err();
        assert!(matches!(error, StoreError::Unavailable { .. }) && error.is_retryable(), "{error:?}");
    }

    /// The claim every fetch makes stays prepared whatever it is bound to
    /// (see [`super::CLAIM`]), taken from rusqlite's statement cache as the
    /// store takes it: a statement re-planned per fetch cost a quarter of
    /// the fetch.
    #[test]
    fn the_claim_is_planned_once_whatever_its_limit() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        super::MIGRATIONS.iter().for_each(|m| conn.execute_batch(m).unwrap());
        for i in 0..100 {
            conn.execute(
                "INSERT INTO jobs (topic, input, policy, attempt, state, enqueued_at) VALUES ('topic', x'00', '{}', 1, 0, ?1)",
                [i],
            )
            .unwrap();
        }
        let mut claimed = 0;
        for limit in 1..=10i64 {
            let mut claim = conn.prepare_cached(super::CLAIM).unwrap();
            let mut rows = claim.query(rusqlite::params!["worker", limit, 1000 + limit, "topic", limit]).unwrap();
            while rows.next().unwrap().is_some() {
                claimed += 1;
            }
        }
        assert_eq!(claimed, 55, "each claim took its limit's worth of jobs");
        let replanned = conn.prepare_cached(super::CLAIM).unwrap().get_status(rusqlite::StatementStatus::RePrepare);
        assert!(replanned <= 1, "the claim was prepared again {replanned} times in 10 fetches");
    }

    /// A fetch that finds nothing changes nothing in the file (it used to
    /// draw a lock token, a write, each time), and each claim that takes
    /// jobs still gets a token of its own.
    #[test]
    fn a_fetch_that_finds_nothing_writes_nothing_and_claims_get_distinct_tokens() {
        use std::time::{Duration, SystemTime};

        use husk::store::{FetchRequest, JobStore, NewJob};

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("husk.db");
        let store = SqliteStore::open(&path, Durability::Normal).unwrap();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let topics = ["t".to_owned()];
        let request = FetchRequest { worker: "w", topics: &topics, max: 4, lock_duration: Duration::from_secs(60) };
        let job = || NewJob {
            topic: "t".into(),
            input: b"{}".to_vec(),
            policy: Default::default(),
            not_before: None,
            key: None,
            keep_input: true,
            priority: 0,
        };
        // Another connection sees `data_version` change when the file's
        // content is changed by a commit of the store's.
        let watcher = rusqlite::Connection::open(&path).unwrap();
        let version = || watcher.query_row("PRAGMA data_version", [], |r| r.get::<_, i64>(0)).unwrap();

        store.enqueue(vec![job()], now).unwrap();
        let first = store.fetch_and_lock(request, now).unwrap().jobs;
        assert_eq!(first.len(), 1);
        let before = version();
        assert!(store.fetch_and_lock(request, now).unwrap().jobs.is_empty());
        assert_eq!(version(), before, "the empty fetch wrote to the file");
        store.enqueue(vec![job(), job()], now).unwrap();
        assert_ne!(version(), before, "the watcher sees the store's commits");
        let second = store.fetch_and_lock(request, now).unwrap().jobs;
        assert_eq!(second.len(), 2);
        assert_eq!(second[0].lock.token, second[1].lock.token, "one token per claim");
        assert_ne!(second[0].lock.token, first[0].lock.token, "each claim its own token");
        store.enqueue(vec![job()], now).unwrap();
        let third = store.fetch_and_lock(request, now).unwrap().jobs;
        assert!(![first[0].lock.token, second[0].lock.token].contains(&third[0].lock.token));
    }
}
