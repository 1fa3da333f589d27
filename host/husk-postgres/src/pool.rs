//! Pooled connections with their prepared statements, transactions, and
//! failures named as [`StoreError`]s.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use postgres::types::ToSql;
use postgres::{Client, NoTls, Row, Statement};

use std::sync::Arc;

use husk::store::{Cause, StoreError};

use crate::{Channels, PostgresStore};

/// A pooled connection with its prepared statements.
pub(crate) struct PgConn {
    pub(crate) client: Client,
    pub(crate) statements: HashMap<&'static str, Statement>,
    /// When the connection was last given back to the pool whole.
    returned: Option<Instant>,
}

/// Whether a connection given back at `returned` is to be checked with a
/// round trip at checkout `now`: it has never been given back, or it lay
/// idle longer than `trusted_idle`.
fn worth_checking(returned: Option<Instant>, now: Instant, trusted_idle: Duration) -> bool {
    returned.is_none_or(|at| now.saturating_duration_since(at) > trusted_idle)
}

pub(crate) struct Manager {
    pub(crate) config: postgres::Config,
    /// See [`crate::PostgresConfig::trusted_idle`].
    pub(crate) trusted_idle: Duration,
}

impl r2d2::ManageConnection for Manager {
    type Connection = PgConn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<PgConn, postgres::Error> {
        Ok(PgConn { client: self.config.connect(NoTls)?, statements: HashMap::new(), returned: None })
    }

    /// Checked out: a round trip only after the trusted idle time in the
    /// pool.
    fn is_valid(&self, conn: &mut PgConn) -> Result<(), postgres::Error> {
        if !worth_checking(conn.returned, Instant::now(), self.trusted_idle) {
            return Ok(());
        }
        conn.client.simple_query("").map(drop)
    }

    /// Given back (r2d2 calls this on every return): broken if closed, and
    /// else stamped with the time for [`Manager::is_valid`].
    fn has_broken(&self, conn: &mut PgConn) -> bool {
        conn.returned = Some(Instant::now());
        conn.client.is_closed()
    }
}

/// The prepared statement of `sql` on this connection, preparing it once.
pub(crate) fn cached(
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
pub(crate) struct Tx<'a> {
    pub(crate) tx: postgres::Transaction<'a>,
    pub(crate) statements: &'a mut HashMap<&'static str, Statement>,
    /// Whom, once committed, the transaction's jobs made fetchable should
    /// wake in other processes.
    wake: Wake,
}

/// The other processes' fetchers a transaction wakes (one `NOTIFY`).
#[derive(Debug, Default, PartialEq)]
pub(crate) enum Wake {
    #[default]
    None,
    /// As many fetchers of one topic as it has new jobs.
    Topic(String, u64),
    /// Every fetcher.
    All,
}

impl Wake {
    /// This wake and `jobs` more of `topic`'s.
    pub(crate) fn and_topic(self, topic: &str, jobs: u64) -> Wake {
        match self {
            Wake::None => Wake::Topic(topic.to_owned(), jobs),
            Wake::Topic(woken, before) if woken == topic => Wake::Topic(woken, before.saturating_add(jobs)),
            _ => Wake::All,
        }
    }

    /// The `NOTIFY` payload: the sender's mark, then for a topic's wake the
    /// job count and the topic (last: it may hold spaces). A listener that
    /// reads only the mark (husk before this payload) wakes everything.
    pub(crate) fn payload(&self, sender: &str) -> Option<String> {
        match self {
            Wake::None => None,
            Wake::Topic(topic, jobs) => Some(format!("{sender} {jobs} {topic}")),
            Wake::All => Some(sender.to_owned()),
        }
    }
}

/// A `NOTIFY` payload read back: the sender's mark, and the topic's wake if
/// it is one (see [`Wake::payload`]).
pub(crate) fn parse_wake(payload: &str) -> (&str, Option<(&str, u64)>) {
    let mut parts = payload.splitn(3, ' ');
    let sender = parts.next().unwrap_or_default();
    match (parts.next().and_then(|n| n.parse().ok()), parts.next()) {
        (Some(jobs), Some(topic)) => (sender, Some((topic, jobs))),
        _ => (sender, None),
    }
}

impl Tx<'_> {
    /// Wakes the other processes' fetchers when this transaction commits:
    /// one `NOTIFY` on the jobs channel, however often it is asked for,
    /// carrying this store's mark (its own listener ignores it: its
    /// dispatcher wakes its own fetchers). Sent inside the transaction: a
    /// coalesced `NOTIFY` sent after the commit from a thread of its own,
    /// without waiting for its flush, was tried and gave no gain (three
    /// processes enqueuing one job per HTTP request: 866–963 jobs/s with it,
    /// 876–912 without), so it is not worth its thread and connection.
    pub(crate) fn wake_fetchers(&mut self) {
        self.wake = Wake::All;
    }

    /// Wakes `jobs` fetchers of `topic` in other processes when this
    /// transaction commits (see [`Tx::wake_fetchers`]; wakes of two topics
    /// in one transaction wake every fetcher).
    pub(crate) fn wake_topic(&mut self, topic: &str, jobs: u64) {
        self.wake = std::mem::take(&mut self.wake).and_topic(topic, jobs);
    }

    pub(crate) fn statement(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        cached(self.statements, sql, |sql| self.tx.prepare(sql))
    }

    pub(crate) fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.query(&statement, params)
    }

    pub(crate) fn query_one(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.query_one(&statement, params)
    }

    pub(crate) fn query_opt(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.query_opt(&statement, params)
    }

    pub(crate) fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, postgres::Error> {
        let statement = self.statement(sql)?;
        self.tx.execute(&statement, params)
    }
}

/// What a statement returns.
pub(crate) type QueryResult = Result<Vec<Row>, postgres::Error>;

/// Runs one statement: autocommitted (see [`PostgresStore::autocommit`]) or
/// in a transaction ([`Tx::query`]).
pub(crate) type Query<'a> = &'a mut dyn FnMut(&'static str, &[&(dyn ToSql + Sync)]) -> QueryResult;

/// A failure inside a store method, before it is named.
#[derive(Debug)]
pub(crate) enum PgError {
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

/// A failure of `what` on `store`, of the kind a caller can act on: by the
/// SQLSTATE class of a database error (08 connection, 53 resources, 57
/// operator intervention: unavailable; 40 transaction rollback, 23 integrity
/// constraint: conflict), a lost connection or a pool timeout unavailable,
/// a stored value that does not decode corrupt.
pub(crate) fn store_error(store: String, what: &str, error: PgError) -> StoreError {
    match error {
        PgError::Db(e) => {
            let message = format!("{what}: {}", describe(&e));
            let class = e.code().map(|code| code.code()[..2].to_owned());
            let cause: Option<Cause> = Some(Arc::new(e));
            match class.as_deref() {
                Some("08" | "53" | "57") | None => StoreError::Unavailable { store, message, cause },
                Some("40" | "23") => StoreError::Conflict { store, message, cause },
                Some(_) => StoreError::Failed { store, message, cause },
            }
        }
        PgError::Json(e) => {
            let message = format!("{what}: unreadable stored value: {e}");
            StoreError::Corrupt { store, message, cause: Some(Arc::new(e)) }
        }
        PgError::Pool(e) => {
            let message = format!("{what}: {e}");
            StoreError::Unavailable { store, message, cause: Some(Arc::new(e)) }
        }
    }
}

/// One line for a driver error: the server's message when there is one,
/// else the error and its causes.
pub(crate) fn describe(error: &postgres::Error) -> String {
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

impl PostgresStore {
    pub(crate) fn run<R>(
        &self,
        what: &str,
        f: impl FnOnce(&mut Tx<'_>) -> Result<R, PgError>,
    ) -> Result<R, StoreError> {
        self.run_with(what, |tx, _| f(tx))
    }

    pub(crate) fn run_with<R>(
        &self,
        what: &str,
        f: impl FnOnce(&mut Tx<'_>, &Channels) -> Result<R, PgError>,
    ) -> Result<R, StoreError> {
        let fail = |e: PgError| self.fail(what, e);
        let mut conn = self.pool.get().map_err(|e| fail(PgError::Pool(e)))?;
        let PgConn { client, statements, .. } = &mut *conn;
        let tx = client.transaction().map_err(|e| fail(e.into()))?;
        let mut tx = Tx { tx, statements, wake: Wake::None };
        let result = f(&mut tx, &self.channels).map_err(fail)?;
        if let Some(payload) = tx.wake.payload(&self.channels.sender) {
            tx.execute("SELECT pg_notify($1, $2)", &[&self.channels.jobs, &payload]).map_err(|e| fail(e.into()))?;
        }
        tx.tx.commit().map_err(|e| fail(e.into()))?;
        Ok(result)
    }

    /// Runs `f` on a pooled connection without a transaction: each
    /// statement `f` runs through its `query` commits on its own.
    pub(crate) fn autocommit<R>(
        &self,
        what: &str,
        f: impl FnOnce(Query<'_>) -> Result<R, PgError>,
    ) -> Result<R, StoreError> {
        let mut conn = self.pool.get().map_err(|e| self.fail(what, PgError::Pool(e)))?;
        let PgConn { client, statements, .. } = &mut *conn;
        f(&mut |sql, params| {
            let statement = cached(statements, sql, |sql| client.prepare(sql))?;
            client.query(&statement, params)
        })
        .map_err(|e| self.fail(what, e))
    }

    /// A store failure on one line, naming the store and the operation.
    pub(crate) fn fail(&self, what: &str, error: PgError) -> StoreError {
        store_error(format!("PostgreSQL store {}", self.name), what, error)
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{Wake, parse_wake, worth_checking};

    #[test]
    fn a_connection_is_checked_when_new_or_idle_longer_than_trusted() {
        let now = Instant::now();
        let second = Duration::from_secs(1);
        assert!(worth_checking(None, now, second), "never given back");
        assert!(!worth_checking(Some(now - second / 2), now, second), "given back half a second ago");
        assert!(worth_checking(Some(now - 2 * second), now, second), "idle two seconds");
        assert!(worth_checking(Some(now - second / 2), now, Duration::ZERO), "zero trusts nothing");
        assert!(!worth_checking(Some(now + second), now, second), "a stamp after now is fresh");
    }

    #[test]
    fn a_topics_wake_carries_its_topic_and_count_and_a_mixed_one_wakes_all() {
        let payload = Wake::Topic("orders eu".into(), 3).payload("mark").unwrap();
        assert_eq!(parse_wake(&payload), ("mark", Some(("orders eu", 3))));
        assert_eq!(parse_wake(&Wake::All.payload("mark").unwrap()), ("mark", None));
        assert_eq!(Wake::None.payload("mark"), None);
        let wake = Wake::None.and_topic("a", 1).and_topic("a", 2);
        assert_eq!(wake, Wake::Topic("a".into(), 3), "one topic's jobs add up");
        assert_eq!(wake.and_topic("b", 1), Wake::All, "two topics wake everyone");
        assert_eq!(Wake::All.and_topic("a", 1), Wake::All);
        // A payload of husk before topic wakes (the mark alone) wakes all.
        assert_eq!(parse_wake("3f-17a-0"), ("3f-17a-0", None));
    }
}
