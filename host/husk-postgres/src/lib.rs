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
//!   ([`StoreEvents`](husk::store::StoreEvents)); gates and lock expiries are timed wakes computed by
//!   every fetch (`next_wake`).
//! - The outcome log's `seq`s come from a sequence; each transaction that
//!   ends jobs first marks itself with a shared advisory lock keyed by the
//!   highest seq drawn so far, and a consumer reading
//!   `outcomes_after(cursor)` reads only below the lowest mark still held,
//!   so it never skips an outcome that commits late, while such commits
//!   share WAL flushes (see `sequence`).
//! - Each process vacuums `husk_jobs` once its claims and reports have left
//!   enough dead row versions in it, since claims walk past them until a
//!   vacuum removes them (see `vacuum`).
//! - An enqueue is one statement: it draws the ids, takes the idempotency
//!   keys (in `husk_keys`, `INSERT ... ON CONFLICT DO NOTHING`) and writes
//!   the rows that took theirs. Of concurrent enqueues of one key, one
//!   takes it and the others wait for its commit, then return its job
//!   without writing one (see `enqueue`).
//!
//! Durability: enqueues, reports, cancels and retries commit with the
//! server's `synchronous_commit` (on by default: the commit is flushed to
//! the WAL before the call returns, and survives a crash of husk, of the
//! server, or a power loss when `fsync` is on). A claim that ends no job
//! commits with `synchronous_commit = off`: losing it in a server crash
//! only makes the job fetchable again, and any later synchronous commit
//! (such as the report of that job) flushes it first.

mod enqueue;
mod listener;
mod migrations;
mod pool;
mod report;
mod rows;
mod sequence;
mod store;
mod supports;
mod vacuum;

use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use postgres::NoTls;

use husk::store::StoreError;
use husk::store::sql::SCHEMA_VERSION;

use listener::Listener;
use migrations::{MigrateError, migrate};
use pool::{Manager, PgError, describe, store_error};
use vacuum::Vacuum;

/// How to reach the database.
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    /// A `postgres://user:password@host:port/db` URL (or a libpq
    /// `key=value` string). Its connections show in `pg_stat_activity` as
    /// the URL's `application_name`, else as `husk`.
    pub url: String,
    /// Most connections this process opens (besides the listener and the
    /// vacuum thread's, one each).
    pub pool_size: u32,
    /// How long to wait for a connection.
    pub connect_timeout: Duration,
    /// The schema husk's tables live in (created if missing); `None`: the
    /// connection's default (`public`). Several husk deployments can share
    /// a database, each in its own schema.
    pub schema: Option<String>,
    /// How long a pooled connection may lie idle and still be handed out
    /// without a round trip to check it. A connection given back this
    /// recently was working then, and checking every checkout cost a round
    /// trip per store call; one that broke since (the server restarted)
    /// fails its one call as unavailable, as a call cut off mid-way does,
    /// and is dropped. `Duration::ZERO` checks every checkout.
    pub trusted_idle: Duration,
}

impl PostgresConfig {
    /// `url` with a pool of 16 connections, a 5 s connect timeout, and
    /// connections idle over 1 s checked at checkout (pgxpool's default).
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            pool_size: 16,
            connect_timeout: Duration::from_secs(5),
            schema: None,
            trusted_idle: Duration::from_secs(1),
        }
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

/// The PostgreSQL [`JobStore`](husk::store::JobStore).
pub struct PostgresStore {
    name: String,
    config: postgres::Config,
    pool: r2d2::Pool<Manager>,
    channels: Channels,
    last_reclaim: Mutex<Option<SystemTime>>,
    listener: Mutex<Option<Listener>>,
    /// This process's dispatcher, once subscribed: asked how many of a
    /// topic's fetchers wait here before other processes are woken.
    events: Mutex<Option<std::sync::Weak<dyn husk::store::StoreEvents>>>,
    /// Vacuums `husk_jobs` as this process's claims and reports leave dead
    /// row versions in it.
    vacuum: Vacuum,
}

/// The `NOTIFY` channels of one deployment (suffixed by its schema:
/// channels are database-wide), and this store's own mark on what it sends
/// on the jobs channel (its own wakes are not for its own fetchers: its
/// dispatcher woke those already).
#[derive(Debug, Clone)]
pub(crate) struct Channels {
    pub(crate) jobs: String,
    pub(crate) cancel: String,
    pub(crate) sender: String,
}

impl Channels {
    pub(crate) fn new(schema: Option<&str>) -> Self {
        static OPENED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let suffix = schema.map(|s| format!("_{s}")).unwrap_or_default();
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let opened = OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let sender = format!("{:x}-{:x}-{opened:x}", std::process::id(), nanos);
        Self { jobs: format!("husk_jobs{suffix}"), cancel: format!("husk_cancel{suffix}"), sender }
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
            cause: None,
        };
        let mut pg: postgres::Config =
            config.url.parse().map_err(|e: postgres::Error| refused("bad URL", describe(&e)))?;
        pg.connect_timeout(config.connect_timeout);
        // "husk" in `pg_stat_activity`, unless the URL names it otherwise.
        if pg.get_application_name().is_none() {
            pg.application_name("husk");
        }
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
            .build(Manager { config: pg.clone(), trusted_idle: config.trusted_idle })
            .map_err(|e| store_error(store.clone(), "cannot open the connection pool", PgError::Pool(e)))?;
        Ok(Self {
            vacuum: Vacuum::new(pg.clone(), name.clone()),
            name,
            config: pg,
            pool,
            channels,
            last_reclaim: Mutex::new(None),
            listener: Mutex::new(None),
            events: Mutex::new(None),
        })
    }

    /// The database, password redacted.
    pub fn name(&self) -> &str {
        &self.name
    }
}
