//! Rows of the SQLite store: reading jobs and outcomes, and the writes
//! shared by several calls (arming, ending, reclaiming expired locks).

use std::time::SystemTime;

use rusqlite::{Connection, OptionalExtension, params};

use husk::outcome::{Outcome, TerminalOutcome};
use husk::store::sql::{
    Expired, LIVE_COLUMNS, LiveRow, OUTCOME_COLUMNS, OutcomeRow, armed_state, history_of, millis, record_of_outcome,
    time, to_json,
};
use husk::store::{AttemptRecord, JobId, JobRecord};

pub(crate) fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> rusqlite::Result<T> {
    serde_json::from_str(text).map_err(json_err)
}

pub(crate) fn json_err(e: serde_json::Error) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, e.into())
}

pub(crate) fn live_row(tx: &Connection, id: i64) -> rusqlite::Result<Option<LiveRow>> {
    tx.prepare_cached(&format!("SELECT {LIVE_COLUMNS} FROM jobs WHERE id = ?1"))?
        .query_row([id], |r| {
            Ok(LiveRow {
                id: r.get(0)?,
                topic: r.get(1)?,
                policy: r.get(2)?,
                attempt: r.get(3)?,
                state: r.get(4)?,
                enqueued_at: r.get(5)?,
                not_before: r.get(6)?,
                last_fault: r.get(7)?,
                cancel_requested: r.get(8)?,
                lock_worker: r.get(9)?,
                lock_token: r.get(10)?,
                lock_expires_at: r.get(11)?,
                priority: r.get(12)?,
            })
        })
        .optional()
}

/// The `history` column with the attempt `?n` (JSON, or NULL for none)
/// appended.
macro_rules! appended_history {
    ($n:literal) => {
        concat!("CASE WHEN ?", $n, " IS NULL THEN history ELSE json_insert(history, '$[#]', json(?", $n, ")) END")
    };
}

/// Ends a live job, with `attempt` (if it spent one) appended to its
/// history: records its outcome (an open incident when `Failed`) and
/// removes it from the live jobs.
pub(crate) fn end(
    tx: &Connection,
    job: &LiveRow,
    outcome: Outcome,
    attempt: Option<&AttemptRecord>,
    now: SystemTime,
) -> rusqlite::Result<TerminalOutcome> {
    let incident = matches!(outcome, Outcome::Failed { .. });
    tx.prepare_cached(concat!(
        "INSERT INTO outcomes (job_id, generation, topic, attempts, enqueued_at, finished_at, outcome, policy,
                               last_fault, open_incident, keep_input, priority, input, history)
         SELECT id, generation, topic, ?2, enqueued_at, ?3, ?4, policy, ?5, ?6, keep_input, priority,
                CASE WHEN ?6 OR keep_input THEN input END, ",
        appended_history!(7),
        " FROM jobs WHERE id = ?1"
    ))?
    .execute(params![
        job.id,
        job.attempts_made(),
        millis(now),
        to_json(&outcome),
        job.outcome_fault(&outcome),
        incident,
        attempt.map(to_json),
    ])?;
    let seq = tx.last_insert_rowid();
    tx.prepare_cached("DELETE FROM jobs WHERE id = ?1")?.execute([job.id])?;
    Ok(job.terminal(seq, outcome, now))
}

/// A job to put in the queue or behind its gate (see [`arm`]).
pub(crate) struct Arm<'a> {
    pub(crate) id: i64,
    /// The attempt it will be on.
    pub(crate) attempt: i64,
    /// Its new last fault (JSON); `None` keeps the old one.
    pub(crate) fault: Option<&'a str>,
    pub(crate) gate: Option<SystemTime>,
    /// The attempt it spent, to append to its history.
    pub(crate) spent: Option<&'a AttemptRecord>,
}

/// Puts an unlocked live job in the queue or behind its gate.
pub(crate) fn arm(tx: &Connection, arm: Arm<'_>, now: SystemTime) -> rusqlite::Result<()> {
    let (state, not_before) = armed_state(arm.gate, now);
    tx.prepare_cached(concat!(
        "UPDATE jobs SET state = ?2, not_before = ?3, attempt = ?4, last_fault = COALESCE(?5, last_fault),
                lock_worker = NULL, lock_token = NULL, lock_expires_at = NULL, history = ",
        appended_history!(6),
        " WHERE id = ?1"
    ))?
    .execute(params![arm.id, state, not_before, arm.attempt, arm.fault, arm.spent.map(to_json)])?;
    Ok(())
}

pub(crate) fn reclaim_expired(
    tx: &Connection,
    now: SystemTime,
    ended: &mut Vec<TerminalOutcome>,
) -> rusqlite::Result<()> {
    let expired: Vec<i64> = tx
        .prepare_cached("SELECT id FROM jobs WHERE state = 2 AND lock_expires_at <= ?1")?
        .query_map([millis(now)], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in expired {
        let Some(job) = live_row(tx, id)? else { continue };
        let (expired, spent) = job.expire(now).map_err(json_err)?;
        match expired {
            Expired::ReArm { fault, gate } => {
                let next =
                    Arm { id, attempt: job.attempt + 1, fault: Some(&fault), gate: Some(gate), spent: Some(&spent) };
                arm(tx, next, now)?;
            }
            Expired::End(outcome) => ended.push(end(tx, &job, outcome, Some(&spent), now)?),
        }
    }
    Ok(())
}

pub(crate) fn outcome_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<OutcomeRow> {
    let outcome: String = r.get(6)?;
    Ok(OutcomeRow {
        outcome: TerminalOutcome {
            seq: r.get::<_, i64>(0)? as u64,
            job_id: JobId(r.get::<_, i64>(1)? as u64),
            topic: r.get(2)?,
            attempts: r.get::<_, i64>(3)? as u32,
            enqueued_at: time(r.get(4)?),
            finished_at: time(r.get(5)?),
            outcome: from_json(&outcome)?,
        },
        policy: r.get(7)?,
        last_fault: r.get(8)?,
        open_incident: r.get(9)?,
        priority: r.get(10)?,
    })
}

pub(crate) fn record_of(row: OutcomeRow) -> rusqlite::Result<JobRecord> {
    record_of_outcome(row).map_err(json_err)
}

/// A job's record, live or ended; with its attempts when `with_attempts`.
/// Its statements read one snapshot: every store call runs in a
/// transaction (see `group`).
pub(crate) fn get_record(conn: &Connection, id: i64, with_attempts: bool) -> rusqlite::Result<Option<JobRecord>> {
    let history = |sql: &str, key: i64| -> rusqlite::Result<Vec<AttemptRecord>> {
        if !with_attempts {
            return Ok(Vec::new());
        }
        let json: String = conn.prepare_cached(sql)?.query_row([key], |r| r.get(0))?;
        history_of(&json).map_err(json_err)
    };
    if let Some(job) = live_row(conn, id)? {
        let attempts = history("SELECT history FROM jobs WHERE id = ?1", id)?;
        return Ok(Some(JobRecord { attempts, ..job.record().map_err(json_err)? }));
    }
    let row = conn
        .prepare_cached(&format!("SELECT {OUTCOME_COLUMNS} FROM outcomes WHERE job_id = ?1 ORDER BY seq DESC LIMIT 1"))?
        .query_row([id], outcome_row)
        .optional()?;
    let Some(row) = row else { return Ok(None) };
    let attempts = history("SELECT history FROM outcomes WHERE seq = ?1", row.outcome.seq as i64)?;
    Ok(Some(JobRecord { attempts, ..record_of(row)? }))
}

/// The job that took idempotency key `key`, if one did.
pub(crate) fn keyed_job(tx: &Connection, key: &str) -> rusqlite::Result<Option<JobId>> {
    let id: Option<i64> =
        tx.prepare_cached("SELECT job_id FROM keys WHERE key = ?1")?.query_row([key], |r| r.get(0)).optional()?;
    Ok(id.map(|id| JobId(id as u64)))
}
