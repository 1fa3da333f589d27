//! The PostgreSQL job store, for several husk processes (on several hosts)
//! sharing one database.
//!
//! - Claims lock rows with `FOR UPDATE SKIP LOCKED`: concurrent fetchers
//!   never wait on each other's rows and never take the same job. A claim
//!   takes queued jobs and gated jobs whose gate has passed, one statement
//!   per topic; expired locks are reclaimed by a fetch that finds nothing to
//!   claim, and at least once a second by the others. A report checks the
//!   lock token in the statement that applies it (the `DELETE` of a
//!   completion, or under `FOR UPDATE`), so a job is ended or re-armed only
//!   by the holder of its current lock.
//! - Wakes: an enqueue, re-arm or retried incident sends `NOTIFY husk_jobs`;
//!   a cancel of a running job sends `NOTIFY husk_cancel` with its id (both
//!   suffixed `_<schema>` when a schema is configured). One
//!   listening connection per process forwards both to the dispatcher
//!   ([`StoreEvents`]); gates and lock expiries are timed wakes computed by
//!   every fetch (`next_wake`).
//! - The outcome log's `seq` is taken from one counter row, updated as the
//!   last write of a transaction that ends jobs: outcome-producing commits
//!   are serialized on that row, so `seq` order is commit order and a
//!   consumer reading `outcomes_after(cursor)` never skips an outcome that
//!   commits late.
//! - Idempotency keys live in `husk_keys`, taken in the enqueue's
//!   transaction before the job row is written (`INSERT ... ON CONFLICT DO
//!   NOTHING`): of concurrent enqueues of one key, one takes it and the
//!   others wait for its commit, then return its job without writing one.
//!
//! Durability: enqueues, reports, cancels and retries commit with the
//! server's `synchronous_commit` (on by default: the commit is flushed to
//! the WAL before the call returns, and survives a crash of husk, of the
//! server, or a power loss when `fsync` is on). A claim that ends no job
//! commits with `synchronous_commit = off`: losing it in a server crash
//! only makes the job fetchable again, and any later synchronous commit
//! (such as the report of that job) flushes it first.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use postgres::fallible_iterator::FallibleIterator;
use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement};

use husk::outcome::{Outcome, TerminalOutcome};
use husk::store::sql::{
    Expired, LiveRow, QUEUED, RUNNING, SCHEMA_VERSION, armed_state, depths_of, history_of, live_columns, millis,
    outcome_columns, record_of_outcome, time, to_json,
};
use husk::store::{
    AttemptRecord, CancelResult, Depth, Enqueued, FetchRequest, Fetched, JobId, JobRecord, JobState, JobStore,
    ListFilter, Lock, LockedJob, NewJob, Report, Reported, RetryIncidentResult, StoreError, StoreEvents,
};

/// Migration `i` takes a database from schema `i` to `i + 1` (see
/// [`SCHEMA_VERSION`]); opening applies those past `husk_meta`'s
/// `schema_version`, in one transaction.
const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    r#"
CREATE TABLE husk_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO husk_meta (key, value) VALUES ('schema_version', 0), ('outcome_seq', 0);
CREATE SEQUENCE husk_lock_tokens;
CREATE TABLE husk_jobs (
    id               BIGSERIAL PRIMARY KEY,
    generation       INTEGER  NOT NULL DEFAULT 0,
    topic            TEXT     NOT NULL,
    input            BYTEA    NOT NULL,
    policy           TEXT     NOT NULL,
    attempt          BIGINT   NOT NULL,
    state            BIGINT   NOT NULL,
    not_before       BIGINT,
    lock_worker      TEXT,
    lock_token       BIGINT,
    lock_expires_at  BIGINT,
    last_fault       TEXT,
    cancel_requested BOOLEAN  NOT NULL DEFAULT FALSE,
    enqueued_at      BIGINT   NOT NULL
);
CREATE INDEX husk_jobs_ready ON husk_jobs (topic, id) WHERE state = 0;
CREATE INDEX husk_jobs_gates ON husk_jobs (not_before) WHERE state = 1;
CREATE INDEX husk_jobs_locks ON husk_jobs (lock_expires_at) WHERE state = 2;
CREATE TABLE husk_outcomes (
    seq           BIGINT  PRIMARY KEY,
    job_id        BIGINT  NOT NULL,
    generation    INTEGER NOT NULL,
    topic         TEXT    NOT NULL,
    attempts      BIGINT  NOT NULL,
    enqueued_at   BIGINT  NOT NULL,
    finished_at   BIGINT  NOT NULL,
    outcome       TEXT    NOT NULL,
    policy        TEXT    NOT NULL,
    last_fault    TEXT,
    open_incident BOOLEAN NOT NULL,
    input         BYTEA,
    UNIQUE (job_id, generation)
);
CREATE INDEX husk_outcomes_incidents ON husk_outcomes (job_id) WHERE open_incident;
"#,
    // 2: attempt histories (JSON arrays of `AttemptRecord`s) and
    // idempotency keys (kept after their job ends, so not on its row).
    // Histories are TEXT appended as text, not JSONB: JSONB refuses `\u0000`,
    // which a guest's fault body may hold, and would re-parse the whole
    // history on every append.
    r#"
ALTER TABLE husk_jobs ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
ALTER TABLE husk_outcomes ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
CREATE TABLE husk_keys (key TEXT PRIMARY KEY, job_id BIGINT NOT NULL);
CREATE FUNCTION husk_append(history TEXT, more TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN more = '[]' THEN history
                WHEN history = '[]' THEN more
                ELSE left(history, -1) || ',' || substr(more, 2) END
$$;
"#,
];

/// How often (clock time) a fetch that claims jobs also reclaims expired
/// locks; a fetch that finds nothing to claim always does.
const RECLAIM_EVERY: Duration = Duration::from_secs(1);

/// Key of the advisory lock that serializes migrations of concurrent starts.
const MIGRATION_LOCK: i64 = 0x6875_736b_0001;

/// `SELECT <live columns> FROM husk_jobs` followed by `rest`, as a
/// `&'static str` (statements are cached by their text).
macro_rules! select_live {
    ($rest:literal) => {
        concat!("SELECT ", live_columns!(), " FROM husk_jobs ", $rest)
    };
}

/// Same, for outcome rows.
macro_rules! select_outcomes {
    ($rest:literal) => {
        concat!("SELECT ", outcome_columns!(), " FROM husk_outcomes ", $rest)
    };
}

/// How to reach the database.
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    /// A `postgres://user:password@host:port/db` URL (or a libpq
    /// `key=value` string).
    pub url: String,
    /// Most connections this process opens (besides the listener).
    pub pool_size: u32,
    /// How long to wait for a connection.
    pub connect_timeout: Duration,
    /// The schema husk's tables live in (created if missing); `None`: the
    /// connection's default (`public`). Several husk deployments can share
    /// a database, each in its own schema.
    pub schema: Option<String>,
}

impl PostgresConfig {
    /// `url` with a pool of 16 connections and a 5 s connect timeout.
    pub fn new(url: impl Into<String>) -> Self {
        Self { url: url.into(), pool_size: 16, connect_timeout: Duration::from_secs(5), schema: None }
    }
}

/// `url` with its password replaced by `***`, for errors and logs: in the
/// user info (`postgres://user:secret@host`), in a `password=` query
/// parameter, or in a `key=value` connection string.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url
            .split_whitespace()
            .map(|pair| if pair.starts_with("password=") { "password=***" } else { pair })
            .collect::<Vec<_>>()
            .join(" ");
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            format!("{}:***@{host}", userinfo.split_once(':').map_or(userinfo, |(user, _)| user))
        }
        _ => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<&str> = query
                .split('&')
                .map(|pair| if pair.starts_with("password=") { "password=***" } else { pair })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// A pooled connection with its prepared statements.
struct PgConn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
}

struct Manager {
    config: postgres::Config,
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgConn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<PgConn, postgres::Error> {
        Ok(PgConn { client: self.config.connect(NoTls)?, statements: HashMap::new() })
    }

    fn is_valid(&self, conn: &mut PgConn) -> Result<(), postgres::Error> {
        conn.client.simple_query("").map(drop)
    }

    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.client.is_closed()
    }
}

/// The prepared statement of `sql` on this connection, preparing it once.
fn cached(
    statements: &mut HashMap<&'static str, Statement>,
    sql: &'static str,
    prepare: impl FnOnce(&str) -> Result<Statement, postgres::Error>,
) -> Result<Statement, postgres::Error> {
    if let Some(statement) = statements.get(sql) {
        return Ok(statement.clone());
    }
    let statement = prepare(sql)?;
    statements.insert(sql, statement.clone());
    Ok(statement)
}

/// A transaction with the connection's statement cache.
struct Tx<'a> {
    tx: postgres::Transaction<'a>,
    statements: &'a mut HashMap<&'static str, Statement>,
}

impl Tx<'_> {
    fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        cached(self.statements, sql, |sql| self.tx.prepare(sql))
    }

    fn query(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.query(&statement, params)
    }

    fn query_one(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Row, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.query_one(&statement, params)
    }

    fn query_opt(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.query_opt(&statement, params)
    }

    fn execute(&mut self, sql: &'static str, params: &[&(dyn ToSql + Sync)]) -> Result<u64, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.execute(&statement, params)
    }
}

/// What a statement returns.
type QueryResult = Result<Vec<Row>, postgres::Error>;

/// A failure inside a store method, before it is named.
#[derive(Debug)]
enum PgError {
    Db(postgres::Error),
    Json(serde_json::Error),
    Pool(r2d2::Error),
}

impl From<postgres::Error> for PgError {
    fn from(e: postgres::Error) -> Self {
        PgError::Db(e)
    }
}

impl From<serde_json::Error> for PgError {
    fn from(e: serde_json::Error) -> Self {
        PgError::Json(e)
    }
}

/// One line for a driver error: the server's message when there is one,
/// else the error and its causes.
/// A failure of `what` on `store`, of the kind a caller can act on: by the
/// SQLSTATE class of a database error (08 connection, 53 resources, 57
/// operator intervention: unavailable; 40 transaction rollback, 23 integrity
/// constraint: conflict), a lost connection or a pool timeout unavailable,
/// a stored value that does not decode corrupt.
fn store_error(store: String, what: &str, error: PgError) -> StoreError {
    match error {
        PgError::Db(e) => {
            let message = format!("{what}: {}", describe(&e));
            match e.code().map(|code| &code.code()[..2]) {
                Some("08" | "53" | "57") | None => StoreError::Unavailable { store, message },
                Some("40" | "23") => StoreError::Conflict { store, message },
                Some(_) => StoreError::Failed { store, message },
            }
        }
        PgError::Json(e) => StoreError::Corrupt { store, message: format!("{what}: unreadable stored value: {e}") },
        PgError::Pool(e) => StoreError::Unavailable { store, message: format!("{what}: {e}") },
    }
}

fn describe(error: &postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return db.message().to_owned();
    }
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The PostgreSQL [`JobStore`].
pub struct PostgresStore {
    name: String,
    config: postgres::Config,
    pool: r2d2::Pool<Manager>,
    channels: Channels,
    last_reclaim: Mutex<Option<SystemTime>>,
    listener: Mutex<Option<Listener>>,
}

/// The `NOTIFY` channels of one deployment (suffixed by its schema:
/// channels are database-wide).
#[derive(Debug, Clone)]
struct Channels {
    jobs: String,
    cancel: String,
}

impl Channels {
    fn new(schema: Option<&str>) -> Self {
        let suffix = schema.map(|s| format!("_{s}")).unwrap_or_default();
        Self { jobs: format!("husk_jobs{suffix}"), cancel: format!("husk_cancel{suffix}") }
    }
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").field("url", &self.name).finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects, applies the schema migrations (one process at a time), and
    /// opens the connection pool.
    ///
    /// # Errors
    ///
    /// A one-line [`StoreError`] naming the URL (password redacted): a bad
    /// URL, the server unreachable, authentication refused, or a database
    /// written by a newer husk. Nothing is changed then.
    pub fn open(config: &PostgresConfig) -> Result<Self, StoreError> {
        let name = redact_url(&config.url);
        let store = format!("PostgreSQL store {name}");
        let fail = |what: &str, e: postgres::Error| store_error(store.clone(), what, PgError::Db(e));
        let refused = |what: &str, message: String| StoreError::Failed {
            store: store.clone(),
            message: format!("{what}: {message}"),
        };
        let mut pg: postgres::Config =
            config.url.parse().map_err(|e: postgres::Error| refused("bad URL", describe(&e)))?;
        pg.connect_timeout(config.connect_timeout).application_name("husk");
        let channels = Channels::new(config.schema.as_deref());
        if let Some(schema) = &config.schema {
            if schema.is_empty() || !schema.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(refused("bad schema name", format!("`{schema}` (letters, digits and _ only)")));
            }
            let mut client = pg.connect(NoTls).map_err(|e| fail("cannot connect", e))?;
            client
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .map_err(|e| fail("cannot create the schema", e))?;
        }
        // Claims must scan the (topic, id) index in order and stop at their
        // LIMIT. With stale statistics (a burst of enqueues since the last
        // ANALYZE) the planner may prefer a bitmap scan that reads and sorts
        // every queued job; husk's statements never need bitmap scans.
        let search_path = config.schema.as_ref().map(|s| format!(" -c search_path={s}")).unwrap_or_default();
        pg.options(&format!("-c enable_bitmapscan=off{search_path}"));
        let mut client = pg.connect(NoTls).map_err(|e| fail("cannot connect", e))?;
        migrate(&mut client).map_err(|e| match e {
            MigrateError::Newer(version) => {
                StoreError::NewerSchema { store: store.clone(), version, known: SCHEMA_VERSION }
            }
            MigrateError::Db(e) => fail("cannot apply the schema", e),
        })?;
        drop(client);
        let pool = r2d2::Pool::builder()
            .max_size(config.pool_size.max(1))
            .min_idle(Some(0))
            .connection_timeout(config.connect_timeout)
            .build(Manager { config: pg.clone() })
            .map_err(|e| store_error(store.clone(), "cannot open the connection pool", PgError::Pool(e)))?;
        Ok(Self { name, config: pg, pool, channels, last_reclaim: Mutex::new(None), listener: Mutex::new(None) })
    }

    /// The database, password redacted.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Completes, in one statement committed on its own, every
    /// `Report::Completed` whose lock is held and whose job has no cancel
    /// asked: deletes the jobs and logs their outcomes. Returns how many,
    /// and each report's result (`None`: not applied here).
    fn report_completed(
        &self,
        reports: &[(Lock, Report)],
        now: SystemTime,
    ) -> Result<(usize, Vec<Option<Reported>>), StoreError> {
        let mut results: Vec<Option<Reported>> = vec![None; reports.len()];
        let (mut slots, mut ids, mut tokens, mut outcomes) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut spent = Vec::new();
        for (slot, (lock, report)) in reports.iter().enumerate() {
            if let Report::Completed { output, .. } = report {
                slots.push(slot as i64);
                ids.push(lock.job.0 as i64);
                tokens.push(lock.token as i64);
                outcomes.push(to_json(&Outcome::Completed { output: output.clone() }));
                // The attempt's number is the row's: the statement writes it
                // in front of the rest of the record.
                let record = to_json(&report.attempt_record(0, now).expect("a completion spends its attempt"));
                let rest = record.strip_prefix(r#"{"attempt":0"#).expect("`attempt` is the record's first field");
                spent.push(rest.to_owned());
            }
        }
        if ids.is_empty() {
            return Ok((0, results));
        }
        // The DELETE checks the lock itself, so no prior SELECT ... FOR
        // UPDATE is needed; the seq counter row is locked after the job rows
        // (its new value needs the count of deleted rows).
        let sql = r#"WITH r AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $6::text[])
                                          AS r(slot, id, token, outcome, spent)),
             ended AS (
                 DELETE FROM husk_jobs j USING r
                 WHERE j.id = r.id AND j.state = 2 AND j.lock_token = r.token AND j.lock_expires_at > $5
                       AND NOT j.cancel_requested
                 RETURNING j.id, j.generation, j.topic, j.attempt, j.enqueued_at, j.policy, j.last_fault,
                           r.outcome, r.slot,
                           husk_append(j.history, '[{"attempt":' || j.attempt || r.spent || ']') AS history),
             counter AS (
                 UPDATE husk_meta SET value = value + (SELECT count(*) FROM ended) WHERE key = 'outcome_seq'
                 RETURNING value - (SELECT count(*) FROM ended) AS base),
             numbered AS (
                 SELECT e.*, (SELECT base FROM counter) + row_number() OVER (ORDER BY e.slot) AS seq FROM ended e),
             inserted AS (
                 INSERT INTO husk_outcomes (seq, job_id, generation, topic, attempts, enqueued_at, finished_at,
                                            outcome, policy, last_fault, open_incident, history)
                 SELECT seq, id, generation, topic, attempt, enqueued_at, $5, outcome, policy, last_fault, FALSE,
                        history
                 FROM numbered)
             SELECT slot, seq, id, topic, attempt, enqueued_at FROM numbered"#;
        let rows = self
            .autocommit("report", |query| Ok(query(sql, &[&slots, &ids, &tokens, &outcomes, &millis(now), &spent])?))?;
        for row in &rows {
            let slot = row.get::<_, i64>(0) as usize;
            let Report::Completed { output, .. } = &reports[slot].1 else { unreachable!("only completions are sent") };
            results[slot] = Some(Reported::Ended(Box::new(TerminalOutcome {
                seq: row.get::<_, i64>(1) as u64,
                job_id: JobId(row.get::<_, i64>(2) as u64),
                topic: row.get(3),
                attempts: row.get::<_, i64>(4) as u32,
                enqueued_at: time(row.get(5)),
                finished_at: now,
                outcome: Outcome::Completed { output: output.clone() },
            })));
        }
        Ok((rows.len(), results))
    }

    /// Applies reports after locking their jobs (`SELECT ... FOR UPDATE`).
    fn report_locked(&self, reports: Vec<(Lock, Report)>, now: SystemTime) -> Result<Vec<Reported>, StoreError> {
        self.run_with("report", |tx, channels| {
            let ids: Vec<i64> = reports.iter().map(|(lock, _)| lock.job.0 as i64).collect();
            let mut live: HashMap<i64, LiveRow> = tx
                .query(select_live!("WHERE id = ANY($1) ORDER BY id FOR UPDATE"), &[&ids])?
                .iter()
                .map(|row| {
                    let job = live_row(row);
                    (job.id, job)
                })
                .collect();
            let mut results = Vec::with_capacity(reports.len());
            let (mut arms, mut endings, mut ending_slots) = (Vec::new(), Vec::new(), Vec::new());
            for (lock, report) in reports {
                let Some(job) = live.remove(&(lock.job.0 as i64)).filter(|job| job.held(lock, now)) else {
                    results.push(Reported::LockLost);
                    continue;
                };
                let spent = report.attempt_record(job.attempt as u32, now);
                let outcome = match report {
                    _ if job.cancel_requested => Outcome::Cancelled,
                    Report::Completed { output, .. } => Outcome::Completed { output },
                    Report::End { outcome, .. } => outcome,
                    Report::ReArm { fault, not_before, .. } => {
                        let (fault, gate) = (Some(to_json(&fault)), Some(not_before));
                        arms.push(Arm { id: job.id, attempt: job.attempt + 1, fault, gate, spent });
                        results.push(Reported::ReArmed);
                        continue;
                    }
                    Report::Release => {
                        arms.push(Arm { id: job.id, attempt: job.attempt, fault: None, gate: None, spent: None });
                        results.push(Reported::Released);
                        continue;
                    }
                };
                ending_slots.push(results.len());
                results.push(Reported::LockLost);
                endings.push(Ending { job, outcome, spent });
            }
            if arm_all(tx, &arms, now)? {
                notify(tx, &channels.jobs, "")?;
            }
            for (slot, ended) in ending_slots.into_iter().zip(end_all(tx, endings, now)?) {
                results[slot] = Reported::Ended(Box::new(ended));
            }
            Ok(results)
        })
    }

    /// Whether this fetch should also reclaim expired locks: at most once a
    /// second of clock time on the hot path (and always when nothing is
    /// claimable).
    fn reclaim_due(&self, now: SystemTime) -> bool {
        let mut last = self.last_reclaim.lock();
        let due = last.is_none_or(|at| now < at || now >= at + RECLAIM_EVERY);
        if due {
            *last = Some(now);
        }
        due
    }

    /// Claims without reclaiming, each topic's claim committed on its own.
    fn claim_autocommit(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Vec<LockedJob>, StoreError> {
        self.autocommit("fetch", |query| claim(request, now, query))
    }

    /// A fetch in one transaction: reclaims expired locks, claims, and when
    /// nothing was claimed computes when to wake.
    fn fetch_reclaiming(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError> {
        self.run_with("fetch", |tx, channels| {
            let now_ms = millis(now);
            let expired: Vec<LiveRow> = tx
                .query(select_live!("WHERE state = 2 AND lock_expires_at <= $1 FOR UPDATE SKIP LOCKED"), &[&now_ms])?
                .iter()
                .map(live_row)
                .collect();
            let reclaimed = !expired.is_empty();
            let (mut arms, mut endings) = (Vec::new(), Vec::new());
            for job in expired {
                let (expired, spent) = job.expire(now)?;
                match expired {
                    Expired::ReArm { fault, gate } => {
                        let (attempt, fault, gate, spent) = (job.attempt + 1, Some(fault), Some(gate), Some(spent));
                        arms.push(Arm { id: job.id, attempt, fault, gate, spent });
                    }
                    Expired::End(outcome) => endings.push(Ending { job, outcome, spent: Some(spent) }),
                }
            }
            arm_all(tx, &arms, now)?;
            let mut fetched =
                Fetched { jobs: claim(request, now, |sql, params| tx.query(sql, params))?, ..Fetched::default() };
            if fetched.jobs.is_empty() {
                // The caller waits: until the next gate opens or lock expires
                // (of any topic). Gates already open are claimed by their
                // topics' fetches, not counted here.
                let wake = tx.query_one(
                    "SELECT (SELECT min(not_before) FROM husk_jobs WHERE state = 1 AND not_before > $1),
                            (SELECT min(lock_expires_at) FROM husk_jobs WHERE state = 2 AND lock_expires_at > $1)",
                    &[&now_ms],
                )?;
                let (gate, lock): (Option<i64>, Option<i64>) = (wake.get(0), wake.get(1));
                fetched.next_wake = gate.into_iter().chain(lock).min().map(time);
            }
            if reclaimed {
                // Attempts were spent and jobs ended: commit durably.
                tx.execute("SELECT set_config('synchronous_commit', 'on', true)", &[])?;
                fetched.ended = end_all(tx, endings, now)?;
                if !arms.is_empty() {
                    notify(tx, &channels.jobs, "")?;
                }
            }
            Ok(fetched)
        })
    }

    fn run<R>(&self, what: &str, f: impl FnOnce(&mut Tx<'_>) -> Result<R, PgError>) -> Result<R, StoreError> {
        self.run_with(what, |tx, _| f(tx))
    }

    fn run_with<R>(
        &self,
        what: &str,
        f: impl FnOnce(&mut Tx<'_>, &Channels) -> Result<R, PgError>,
    ) -> Result<R, StoreError> {
        let fail = |e: PgError| self.fail(what, e);
        let mut conn = self.pool.get().map_err(|e| fail(PgError::Pool(e)))?;
        let PgConn { client, statements } = &mut *conn;
        let tx = client.transaction().map_err(|e| fail(e.into()))?;
        let mut tx = Tx { tx, statements };
        let result = f(&mut tx, &self.channels).map_err(fail)?;
        tx.tx.commit().map_err(|e| fail(e.into()))?;
        Ok(result)
    }

    /// Runs `f` on a pooled connection without a transaction: each
    /// statement `f` runs through its `query` commits on its own.
    fn autocommit<R>(
        &self,
        what: &str,
        f: impl FnOnce(&mut dyn FnMut(&'static str, &[&(dyn ToSql + Sync)]) -> QueryResult) -> Result<R, PgError>,
    ) -> Result<R, StoreError> {
        let mut conn = self.pool.get().map_err(|e| self.fail(what, PgError::Pool(e)))?;
        let PgConn { client, statements } = &mut *conn;
        f(&mut |sql, params| {
            let statement = cached(statements, sql, |sql| client.prepare(sql))?;
            client.query(&statement, params)
        })
        .map_err(|e| self.fail(what, e))
    }

    /// A store failure on one line, naming the store and the operation.
    fn fail(&self, what: &str, error: PgError) -> StoreError {
        store_error(format!("PostgreSQL store {}", self.name), what, error)
    }
}

#[derive(Debug)]
enum MigrateError {
    Newer(i64),
    Db(postgres::Error),
}

impl From<postgres::Error> for MigrateError {
    fn from(e: postgres::Error) -> Self {
        MigrateError::Db(e)
    }
}

fn migrate(client: &mut Client) -> Result<(), MigrateError> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    let exists: bool = tx.query_one("SELECT to_regclass('husk_meta') IS NOT NULL", &[])?.get(0);
    let version: i64 = if exists {
        tx.query_opt("SELECT value FROM husk_meta WHERE key = 'schema_version'", &[])?.map_or(0, |r| r.get(0))
    } else {
        0
    };
    if version > SCHEMA_VERSION {
        return Err(MigrateError::Newer(version));
    }
    for migration in MIGRATIONS.iter().skip(version as usize) {
        tx.batch_execute(migration)?;
    }
    tx.execute("UPDATE husk_meta SET value = $1 WHERE key = 'schema_version'", &[&SCHEMA_VERSION])?;
    tx.commit()?;
    Ok(())
}

fn live_row(row: &Row) -> LiveRow {
    LiveRow {
        id: row.get(0),
        topic: row.get(1),
        policy: row.get(2),
        attempt: row.get(3),
        state: row.get(4),
        enqueued_at: row.get(5),
        not_before: row.get(6),
        last_fault: row.get(7),
        cancel_requested: row.get(8),
        lock_worker: row.get(9),
        lock_token: row.get(10),
        lock_expires_at: row.get(11),
    }
}

fn outcome_row(row: &Row) -> Result<(TerminalOutcome, String, Option<String>), serde_json::Error> {
    let outcome: String = row.get(6);
    Ok((
        TerminalOutcome {
            seq: row.get::<_, i64>(0) as u64,
            job_id: JobId(row.get::<_, i64>(1) as u64),
            topic: row.get(2),
            attempts: row.get::<_, i64>(3) as u32,
            enqueued_at: time(row.get(4)),
            finished_at: time(row.get(5)),
            outcome: serde_json::from_str(&outcome)?,
        },
        row.get(7),
        row.get(8),
    ))
}

fn record_of(row: &Row) -> Result<JobRecord, serde_json::Error> {
    let (outcome, policy, last_fault) = outcome_row(row)?;
    record_of_outcome(outcome, &policy, last_fault.as_deref())
}

/// A live, unlocked job to put in the queue or behind its gate.
struct Arm {
    id: i64,
    /// The attempt it will be on.
    attempt: i64,
    /// Its new last fault (JSON); `None` keeps the old one.
    fault: Option<String>,
    gate: Option<SystemTime>,
    /// The attempt it spent, to append to its history.
    spent: Option<AttemptRecord>,
}

/// A live job (its row locked by this transaction) to end.
struct Ending {
    job: LiveRow,
    outcome: Outcome,
    /// The attempt it spent, to append to its history.
    spent: Option<AttemptRecord>,
}

/// History entries to append (`husk_append`): a JSON array of none or one
/// attempt.
fn appended(spent: Option<&AttemptRecord>) -> String {
    to_json(&spent.as_slice())
}

/// Arms jobs in one statement. Returns whether any became fetchable now.
fn arm_all(tx: &mut Tx<'_>, arms: &[Arm], now: SystemTime) -> Result<bool, postgres::Error> {
    if arms.is_empty() {
        return Ok(false);
    }
    let ids: Vec<i64> = arms.iter().map(|a| a.id).collect();
    let (states, gates): (Vec<i64>, Vec<Option<i64>>) = arms.iter().map(|a| armed_state(a.gate, now)).unzip();
    let attempts: Vec<i64> = arms.iter().map(|a| a.attempt).collect();
    let faults: Vec<Option<&str>> = arms.iter().map(|a| a.fault.as_deref()).collect();
    let spent: Vec<String> = arms.iter().map(|a| appended(a.spent.as_ref())).collect();
    tx.execute(
        "UPDATE husk_jobs j SET state = a.state, not_before = a.not_before, attempt = a.attempt,
                last_fault = COALESCE(a.fault, j.last_fault),
                lock_worker = NULL, lock_token = NULL, lock_expires_at = NULL,
                history = husk_append(j.history, a.spent)
         FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::bigint[], $5::text[], $6::text[])
              AS a(id, state, not_before, attempt, fault, spent)
         WHERE j.id = a.id",
        &[&ids, &states, &gates, &attempts, &faults, &spent],
    )?;
    Ok(states.contains(&QUEUED))
}

/// Ends live jobs (rows already locked by this transaction): records their
/// outcomes (with their histories) with the next `seq`s and deletes them
/// from the live jobs. The `seq` counter row is locked last, and held until
/// commit.
fn end_all(tx: &mut Tx<'_>, endings: Vec<Ending>, now: SystemTime) -> Result<Vec<TerminalOutcome>, postgres::Error> {
    if endings.is_empty() {
        return Ok(Vec::new());
    }
    let count = endings.len() as i64;
    let ids: Vec<i64> = endings.iter().map(|e| e.job.id).collect();
    let offsets: Vec<i64> = (1..=count).collect();
    let attempts: Vec<i64> = endings.iter().map(|e| i64::from(e.job.attempts_made())).collect();
    let outcomes: Vec<String> = endings.iter().map(|e| to_json(&e.outcome)).collect();
    let faults: Vec<Option<String>> = endings.iter().map(|e| e.job.outcome_fault(&e.outcome)).collect();
    let incidents: Vec<bool> = endings.iter().map(|e| matches!(e.outcome, Outcome::Failed { .. })).collect();
    let spent: Vec<String> = endings.iter().map(|e| appended(e.spent.as_ref())).collect();
    // One round trip: take `count` seqs from the counter row (locked until
    // commit), delete the jobs, insert their outcomes.
    let row = tx.query_one(
        "WITH counter AS (
             UPDATE husk_meta SET value = value + $8 WHERE key = 'outcome_seq' RETURNING value - $8 AS base),
         ended AS (
             DELETE FROM husk_jobs WHERE id = ANY($1)
             RETURNING id, generation, topic, enqueued_at, policy, input, history),
         inserted AS (
             INSERT INTO husk_outcomes (seq, job_id, generation, topic, attempts, enqueued_at, finished_at, outcome,
                                        policy, last_fault, open_incident, input, history)
             SELECT (SELECT base FROM counter) + r.pos, e.id, e.generation, e.topic, r.attempts, e.enqueued_at,
                    $7, r.outcome, e.policy, r.last_fault, r.incident, CASE WHEN r.incident THEN e.input END,
                    husk_append(e.history, r.spent)
             FROM ended e
             JOIN unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bool[], $9::text[])
                  AS r(id, pos, attempts, outcome, last_fault, incident, spent) ON r.id = e.id
             RETURNING 1)
         SELECT (SELECT base FROM counter), (SELECT count(*) FROM inserted)",
        &[&ids, &offsets, &attempts, &outcomes, &faults, &incidents, &millis(now), &count, &spent],
    )?;
    let (base, inserted): (i64, i64) = (row.get(0), row.get(1));
    debug_assert_eq!(inserted, count, "every ended job was live and locked by this transaction");
    let seqs: Vec<i64> = offsets.iter().map(|offset| base + offset).collect();
    Ok(endings.into_iter().zip(seqs).map(|(e, seq)| e.job.terminal(seq, e.outcome, now)).collect())
}

/// Claims up to `request.max` jobs, topic by topic: queued jobs and gated
/// jobs whose gate has passed, oldest first. `query` runs a statement (in a
/// transaction or on its own).
fn claim(
    request: FetchRequest<'_>,
    now: SystemTime,
    mut query: impl FnMut(&'static str, &[&(dyn ToSql + Sync)]) -> QueryResult,
) -> Result<Vec<LockedJob>, PgError> {
    let expires_at = now + request.lock_duration;
    let mut jobs = Vec::new();
    for topic in request.topics {
        let remaining = request.max.saturating_sub(jobs.len());
        if remaining == 0 {
            break;
        }
        let claimed = query(
            // One topic per claim: the (topic, id) index then yields ids in
            // order and the LIMIT stops the scan. `= ANY(ARRAY(...))`, not a
            // join: claimed ids are looked up by key (a join's generic plan
            // scans the whole table). Claims commit asynchronously (see the
            // module docs).
            "WITH token AS (SELECT nextval('husk_lock_tokens') AS value,
                                   set_config('synchronous_commit', 'off', true)),
                  ready AS (SELECT id FROM husk_jobs WHERE state = 0 AND topic = $3
                            ORDER BY id LIMIT $4 FOR UPDATE SKIP LOCKED),
                  due AS (SELECT id FROM husk_jobs WHERE state = 1 AND not_before <= $5 AND topic = $3
                          ORDER BY not_before LIMIT $4 FOR UPDATE SKIP LOCKED)
             UPDATE husk_jobs SET state = 2, not_before = NULL, lock_worker = $1,
                    lock_token = (SELECT value FROM token), lock_expires_at = $2
             WHERE id = ANY(ARRAY(SELECT id FROM (SELECT id FROM ready UNION ALL SELECT id FROM due) c
                                  ORDER BY id LIMIT $4))
             RETURNING id, input, attempt, policy, enqueued_at, lock_token",
            &[&request.worker, &millis(expires_at), topic, &(remaining as i64), &millis(now)],
        )?;
        for row in &claimed {
            let policy: String = row.get(3);
            jobs.push(LockedJob {
                lock: Lock { job: JobId(row.get::<_, i64>(0) as u64), token: row.get::<_, i64>(5) as u64 },
                topic: topic.clone(),
                input: row.get(1),
                attempt: row.get::<_, i64>(2) as u32,
                policy: serde_json::from_str(&policy)?,
                enqueued_at: time(row.get(4)),
                lock_expires_at: expires_at,
            });
        }
    }
    jobs.sort_by_key(|j| j.lock.job);
    Ok(jobs)
}

/// Takes the idempotency keys of `jobs` for their drawn ids (`results`),
/// and marks each job whose key is taken (`created: false`, with the id of
/// the job that has it): by an earlier job of this call, or in the table.
///
/// Of two transactions inserting one key, the second waits on the first's
/// row until it commits (then does nothing, and reads the row: a new
/// statement sees what committed before it) or rolls back (then takes the
/// key). Keys are inserted in sorted order, so that enqueues with
/// overlapping keys wait on each other in one order and never deadlock.
fn take_keys(tx: &mut Tx<'_>, jobs: &[NewJob], results: &mut [Enqueued]) -> Result<(), postgres::Error> {
    // The first job of this call with a key takes it for the others.
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (slot, job) in jobs.iter().enumerate() {
        if let Some(key) = job.key.as_deref() {
            first.entry(key).or_insert(slot);
        }
    }
    let mut wanted: Vec<(&str, i64)> = first.iter().map(|(key, slot)| (*key, results[*slot].id.0 as i64)).collect();
    wanted.sort_unstable();
    let (keys, ids): (Vec<&str>, Vec<i64>) = wanted.into_iter().unzip();
    let taken: HashSet<String> = tx
        .query(
            "INSERT INTO husk_keys (key, job_id) SELECT * FROM unnest($1::text[], $2::bigint[])
             ON CONFLICT (key) DO NOTHING RETURNING key",
            &[&keys, &ids],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect();
    let held: Vec<&str> = keys.into_iter().filter(|key| !taken.contains(*key)).collect();
    let existing: HashMap<String, i64> = if held.is_empty() {
        HashMap::new()
    } else {
        let rows = tx.query("SELECT key, job_id FROM husk_keys WHERE key = ANY($1)", &[&held])?;
        rows.iter().map(|r| (r.get(0), r.get(1))).collect()
    };
    for (slot, job) in jobs.iter().enumerate() {
        let Some(key) = job.key.as_deref() else { continue };
        if let Some(&id) = existing.get(key) {
            results[slot] = Enqueued { id: JobId(id as u64), created: false };
        } else if first[key] != slot {
            results[slot] = Enqueued { id: results[first[key]].id, created: false };
        }
    }
    Ok(())
}

fn notify(tx: &mut Tx<'_>, channel: &str, payload: &str) -> Result<(), postgres::Error> {
    tx.execute("SELECT pg_notify($1, $2)", &[&channel, &payload]).map(drop)
}

impl JobStore for PostgresStore {
    fn enqueue(&self, jobs: Vec<NewJob>, now: SystemTime) -> Result<Vec<Enqueued>, StoreError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        self.run_with("enqueue", |tx, channels| {
            let count = jobs.len() as i64;
            let mut ids: Vec<i64> = tx
                .query("SELECT nextval('husk_jobs_id_seq') FROM generate_series(1, $1::bigint)", &[&count])?
                .iter()
                .map(|r| r.get(0))
                .collect();
            ids.sort_unstable();
            let mut results: Vec<Enqueued> =
                ids.iter().map(|&id| Enqueued { id: JobId(id as u64), created: true }).collect();
            if jobs.iter().any(|j| j.key.is_some()) {
                take_keys(tx, &jobs, &mut results)?;
            }
            // Only the jobs that took their key (or have none) are written;
            // the ids drawn for the others are left unused.
            let jobs: Vec<&NewJob> = jobs.iter().zip(&results).filter(|(_, e)| e.created).map(|(j, _)| j).collect();
            let ids: Vec<i64> = results.iter().filter(|e| e.created).map(|e| e.id.0 as i64).collect();
            let topics: Vec<&str> = jobs.iter().map(|j| j.topic.as_str()).collect();
            let inputs: Vec<&[u8]> = jobs.iter().map(|j| j.input.as_slice()).collect();
            let policies: Vec<String> = jobs.iter().map(|j| to_json(&j.policy)).collect();
            let (states, gates): (Vec<i64>, Vec<Option<i64>>) =
                jobs.iter().map(|j| armed_state(j.not_before, now)).unzip();
            tx.execute(
                "INSERT INTO husk_jobs (id, topic, input, policy, attempt, state, not_before, enqueued_at)
                 SELECT id, topic, input, policy, 1, state, not_before, $7
                 FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::text[], $5::bigint[], $6::bigint[])
                      AS n(id, topic, input, policy, state, not_before)",
                &[&ids, &topics, &inputs, &policies, &states, &gates, &millis(now)],
            )?;
            if states.contains(&QUEUED) {
                notify(tx, &channels.jobs, "")?;
            }
            Ok(results)
        })
    }

    fn fetch_and_lock(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError> {
        if !self.reclaim_due(now) {
            // The hot path: claims only, each one statement committed on its
            // own; when nothing is claimable, the full path below computes
            // when to wake (and reclaims expired locks).
            let jobs = self.claim_autocommit(request, now)?;
            if !jobs.is_empty() {
                return Ok(Fetched { jobs, ..Fetched::default() });
            }
        }
        self.fetch_reclaiming(request, now)
    }

    fn report(&self, reports: Vec<(Lock, Report)>, now: SystemTime) -> Result<Vec<Reported>, StoreError> {
        let (completed, mut results) = self.report_completed(&reports, now)?;
        if completed < reports.len() {
            // The rest (faults, releases, cancelled or lost locks) in a
            // transaction.
            let (slots, rest): (Vec<usize>, Vec<(Lock, Report)>) =
                reports.into_iter().enumerate().filter(|(i, _)| results[*i].is_none()).unzip();
            for (slot, result) in slots.into_iter().zip(self.report_locked(rest, now)?) {
                results[slot] = Some(result);
            }
        }
        Ok(results.into_iter().map(|r| r.expect("every report applied")).collect())
    }

    fn extend_lock(&self, lock: Lock, until: SystemTime, now: SystemTime) -> Result<bool, StoreError> {
        self.run("extend lock", |tx| {
            let updated = tx.execute(
                "UPDATE husk_jobs SET lock_expires_at = $3
                 WHERE id = $1 AND state = 2 AND lock_token = $2 AND lock_expires_at > $4",
                &[&(lock.job.0 as i64), &(lock.token as i64), &millis(until), &millis(now)],
            )?;
            Ok(updated == 1)
        })
    }

    fn cancel(&self, id: JobId, now: SystemTime) -> Result<CancelResult, StoreError> {
        self.run_with("cancel", |tx, channels| {
            let id = id.0 as i64;
            let Some(row) = tx.query_opt(select_live!("WHERE id = $1 FOR UPDATE"), &[&id])? else {
                let ended: bool =
                    tx.query_one("SELECT EXISTS (SELECT 1 FROM husk_outcomes WHERE job_id = $1)", &[&id])?.get(0);
                return Ok(if ended { CancelResult::AlreadyEnded } else { CancelResult::NotFound });
            };
            let job = live_row(&row);
            if job.state == RUNNING {
                tx.execute("UPDATE husk_jobs SET cancel_requested = TRUE WHERE id = $1", &[&id])?;
                notify(tx, &channels.cancel, &id.to_string())?;
                return Ok(CancelResult::Cancelling);
            }
            let ended = end_all(tx, vec![Ending { job, outcome: Outcome::Cancelled, spent: None }], now)?;
            Ok(CancelResult::Cancelled(Box::new(ended.into_iter().next().expect("one ending, one outcome"))))
        })
    }

    fn retry_incident(&self, id: JobId, _now: SystemTime) -> Result<RetryIncidentResult, StoreError> {
        self.run_with("retry incident", |tx, channels| {
            let id = id.0 as i64;
            let incident = tx.query_opt(
                "SELECT seq, generation FROM husk_outcomes WHERE job_id = $1 AND open_incident FOR UPDATE",
                &[&id],
            )?;
            let Some(incident) = incident else {
                let known: bool = tx
                    .query_one(
                        "SELECT EXISTS (SELECT 1 FROM husk_outcomes WHERE job_id = $1)
                             OR EXISTS (SELECT 1 FROM husk_jobs WHERE id = $1)",
                        &[&id],
                    )?
                    .get(0);
                return Ok(if known { RetryIncidentResult::NotAnIncident } else { RetryIncidentResult::NotFound });
            };
            let (seq, generation): (i64, i32) = (incident.get(0), incident.get(1));
            tx.execute(
                "INSERT INTO husk_jobs (id, generation, topic, input, policy, attempt, state, last_fault, enqueued_at,
                                        history)
                 SELECT job_id, $2 + 1, topic, input, policy, 1, 0, last_fault, enqueued_at, history
                 FROM husk_outcomes WHERE seq = $1",
                &[&seq, &generation],
            )?;
            tx.execute("UPDATE husk_outcomes SET open_incident = FALSE, input = NULL WHERE seq = $1", &[&seq])?;
            notify(tx, &channels.jobs, "")?;
            Ok(RetryIncidentResult::Requeued)
        })
    }

    fn get(&self, id: JobId) -> Result<Option<JobRecord>, StoreError> {
        self.run("get", |tx| get_record(tx, id.0 as i64, true))
    }

    fn list(&self, filter: &ListFilter) -> Result<Vec<JobRecord>, StoreError> {
        let limit = filter.limit.unwrap_or(100) as i64;
        let state = filter.state.map(|s| match s {
            JobState::Queued => QUEUED,
            JobState::Gated => husk::store::sql::GATED,
            JobState::Running => RUNNING,
            JobState::Terminal => -1,
        });
        self.run("list", |tx| {
            let mut ids: Vec<i64> = Vec::new();
            if state != Some(-1) {
                let rows = tx.query(
                    "SELECT id FROM husk_jobs WHERE ($1::text IS NULL OR topic = $1)
                     AND ($2::bigint IS NULL OR state = $2) ORDER BY id DESC LIMIT $3",
                    &[&filter.topic, &state, &limit],
                )?;
                ids.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
            }
            if state.is_none_or(|s| s == -1) {
                let rows = tx.query(
                    "SELECT DISTINCT job_id FROM husk_outcomes o WHERE ($1::text IS NULL OR topic = $1)
                     AND NOT EXISTS (SELECT 1 FROM husk_jobs j WHERE j.id = o.job_id)
                     ORDER BY job_id DESC LIMIT $2",
                    &[&filter.topic, &limit],
                )?;
                ids.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
            }
            ids.sort_unstable_by(|a, b| b.cmp(a));
            ids.truncate(limit as usize);
            let mut records = Vec::with_capacity(ids.len());
            for id in ids {
                records.extend(get_record(tx, id, false)?);
            }
            Ok(records)
        })
    }

    fn incidents(&self) -> Result<Vec<JobRecord>, StoreError> {
        self.run("incidents", |tx| {
            let rows = tx.query(select_outcomes!("WHERE open_incident ORDER BY job_id"), &[])?;
            Ok(rows.iter().map(record_of).collect::<Result<_, _>>()?)
        })
    }

    fn outcomes_after(&self, after: u64, limit: usize) -> Result<Vec<TerminalOutcome>, StoreError> {
        self.run("outcomes", |tx| {
            let rows = tx
                .query(select_outcomes!("WHERE seq > $1 ORDER BY seq LIMIT $2"), &[&(after as i64), &(limit as i64)])?;
            Ok(rows.iter().map(|r| outcome_row(r).map(|(o, _, _)| o)).collect::<Result<_, _>>()?)
        })
    }

    fn depths(&self) -> Result<Vec<(String, Depth)>, StoreError> {
        self.run("depths", |tx| {
            let rows =
                tx.query("SELECT topic, state, count(*) FROM husk_jobs GROUP BY topic, state ORDER BY topic", &[])?;
            Ok(depths_of(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()))
        })
    }

    fn subscribe(&self, events: Weak<dyn StoreEvents>) {
        let mut listener = self.listener.lock();
        if listener.is_none() {
            *listener = Some(Listener::start(self.config.clone(), self.name.clone(), self.channels.clone(), events));
        }
    }
}

/// A job's record, live or ended; with its attempts when `with_attempts`
/// (the `history` column read after the usual ones).
fn get_record(tx: &mut Tx<'_>, id: i64, with_attempts: bool) -> Result<Option<JobRecord>, PgError> {
    let attempts = |row: &Row, column: usize| -> Result<Vec<AttemptRecord>, serde_json::Error> {
        if with_attempts { history_of(row.get(column)) } else { Ok(Vec::new()) }
    };
    let live = match with_attempts {
        true => concat!("SELECT ", live_columns!(), ", history FROM husk_jobs WHERE id = $1"),
        false => select_live!("WHERE id = $1"),
    };
    if let Some(row) = tx.query_opt(live, &[&id])? {
        return Ok(Some(JobRecord { attempts: attempts(&row, 12)?, ..live_row(&row).record()? }));
    }
    let ended = match with_attempts {
        true => concat!(
            "SELECT ",
            outcome_columns!(),
            ", history FROM husk_outcomes WHERE job_id = $1 ORDER BY seq DESC LIMIT 1"
        ),
        false => select_outcomes!("WHERE job_id = $1 ORDER BY seq DESC LIMIT 1"),
    };
    let Some(row) = tx.query_opt(ended, &[&id])? else { return Ok(None) };
    Ok(Some(JobRecord { attempts: attempts(&row, 9)?, ..record_of(&row)? }))
}

/// The connection that `LISTEN`s for other processes' wakes and cancels.
struct Listener {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Listener {
    fn start(config: postgres::Config, name: String, channels: Channels, events: Weak<dyn StoreEvents>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("husk-pg-listen".into())
            .spawn(move || {
                let mut failures = 0u32;
                while !flag.load(Ordering::Acquire) && events.strong_count() > 0 {
                    match listen(&config, &channels, &events, &flag) {
                        Ok(()) => return,
                        Err(error) => {
                            failures = (failures + 1).min(5);
                            tracing::warn!(store = %name, %error, "listener lost; reconnecting");
                            // Waiting fetchers still wake at their poll
                            // timeout meanwhile; nothing is lost.
                            std::thread::sleep(Duration::from_millis(100 << failures));
                        }
                    }
                }
            })
            .expect("spawning the PostgreSQL listener thread");
        Self { stop, thread: Some(thread) }
    }
}

/// Listens until `stop` is set or the dispatcher is gone (`Ok`), or the
/// connection fails (`Err`).
fn listen(
    config: &postgres::Config,
    channels: &Channels,
    events: &Weak<dyn StoreEvents>,
    stop: &AtomicBool,
) -> Result<(), String> {
    let mut client = config.connect(NoTls).map_err(|e| describe(&e))?;
    client
        .batch_execute(&format!("LISTEN {}; LISTEN {};", channels.jobs, channels.cancel))
        .map_err(|e| describe(&e))?;
    // Anything enqueued while (re)connecting: look once.
    if let Some(events) = events.upgrade() {
        events.jobs_available();
    }
    loop {
        if stop.load(Ordering::Acquire) {
            return Ok(());
        }
        let note = client.notifications().timeout_iter(Duration::from_millis(200)).next().map_err(|e| describe(&e))?;
        let Some(events) = events.upgrade() else { return Ok(()) };
        let Some(note) = note else {
            // No notification: a timeout, or the server went away.
            if client.is_closed() {
                return Err("connection closed".into());
            }
            continue;
        };
        if note.channel() == channels.cancel {
            if let Ok(id) = note.payload().parse::<u64>() {
                events.cancel_requested(JobId(id));
            }
        } else {
            events.jobs_available();
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
