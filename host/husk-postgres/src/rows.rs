//! Reading rows into records, and the statements every store call shares:
//! arming and ending jobs, claiming, notifying.

use std::collections::HashMap;
use std::time::SystemTime;

use postgres::Row;

use husk::outcome::{Outcome, TerminalOutcome};
use husk::store::sql::{
    LiveRow, OutcomeRow, QUEUED, armed_state, history_of, live_columns, millis, outcome_columns, record_of_outcome,
    time, to_json,
};
use husk::store::{AttemptRecord, FetchRequest, JobId, JobRecord, Lock, LockedJob};

use crate::pool::{PgError, Query, Tx};

/// `SELECT <live columns> FROM husk_jobs` followed by `rest`, as a
/// `&'static str` (statements are cached by their text).
macro_rules! select_live {
    ($rest:literal) => {
        concat!("SELECT ", ::husk::store::sql::live_columns!(), " FROM husk_jobs ", $rest)
    };
}

/// Same, for outcome rows.
macro_rules! select_outcomes {
    ($rest:literal) => {
        concat!("SELECT ", ::husk::store::sql::outcome_columns!(), " FROM husk_outcomes ", $rest)
    };
}
pub(crate) use {select_live, select_outcomes};

pub(crate) fn live_row(row: &Row) -> LiveRow {
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
        priority: row.get(12),
    }
}

pub(crate) fn outcome_row(row: &Row) -> Result<OutcomeRow, serde_json::Error> {
    let outcome: String = row.get(6);
    Ok(OutcomeRow {
        outcome: TerminalOutcome {
            seq: row.get::<_, i64>(0) as u64,
            job_id: JobId(row.get::<_, i64>(1) as u64),
            topic: row.get(2),
            attempts: row.get::<_, i64>(3) as u32,
            enqueued_at: time(row.get(4)),
            finished_at: time(row.get(5)),
            outcome: serde_json::from_str(&outcome)?,
        },
        policy: row.get(7),
        last_fault: row.get(8),
        open_incident: row.get(9),
        priority: row.get(10),
    })
}

pub(crate) fn record_of(row: &Row) -> Result<JobRecord, serde_json::Error> {
    record_of_outcome(outcome_row(row)?)
}

/// A live, unlocked job to put in the queue or behind its gate.
pub(crate) struct Arm {
    pub(crate) id: i64,
    /// The attempt it will be on.
    pub(crate) attempt: i64,
    /// Its new last fault (JSON); `None` keeps the old one.
    pub(crate) fault: Option<String>,
    pub(crate) gate: Option<SystemTime>,
    /// The attempt it spent, to append to its history.
    pub(crate) spent: Option<AttemptRecord>,
}

/// A live job (its row locked by this transaction) to end.
pub(crate) struct Ending {
    pub(crate) job: LiveRow,
    pub(crate) outcome: Outcome,
    /// The attempt it spent, to append to its history.
    pub(crate) spent: Option<AttemptRecord>,
}

/// `record` as JSON without its `attempt`: the members of the object after
/// its opening brace, closing brace included, for a statement that writes
/// `{"attempt":<the row's attempt>,` in front.
pub(crate) fn members_but_attempt(record: &AttemptRecord) -> String {
    let mut value = serde_json::to_value(record).expect("an attempt record serializes");
    if let Some(members) = value.as_object_mut() {
        members.remove("attempt");
    }
    let text = value.to_string();
    text.strip_prefix('{').expect("a record is a JSON object").to_owned()
}

/// History entries to append (`husk_append`): a JSON array of none or one
/// attempt.
pub(crate) fn appended(spent: Option<&AttemptRecord>) -> String {
    to_json(&spent.as_slice())
}

/// Arms jobs in one statement. Returns whether any became fetchable now.
pub(crate) fn arm_all(tx: &mut Tx<'_>, arms: &[Arm], now: SystemTime) -> Result<bool, postgres::Error> {
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
/// outcomes (with their histories) with the next `seq`s (drawn under this
/// transaction's writer mark, see [`crate::sequence`]) and deletes them from
/// the live jobs.
pub(crate) fn end_all(
    tx: &mut Tx<'_>,
    endings: Vec<Ending>,
    now: SystemTime,
) -> Result<Vec<TerminalOutcome>, postgres::Error> {
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
    // One round trip: draw `count` seqs, delete the jobs, insert their
    // outcomes (the n-th ending gets the n-th smallest seq).
    let rows = tx.query(
        "WITH seqs AS (
             SELECT seq, row_number() OVER (ORDER BY seq) AS pos FROM husk_next_seqs($8) AS seq),
         ended AS (
             DELETE FROM husk_jobs WHERE id = ANY($1)
             RETURNING id, generation, topic, enqueued_at, policy, input, history, keep_input, priority),
         inserted AS (
             INSERT INTO husk_outcomes (seq, job_id, generation, topic, attempts, enqueued_at, finished_at, outcome,
                                        policy, last_fault, open_incident, keep_input, priority, input, history)
             SELECT s.seq, e.id, e.generation, e.topic, r.attempts, e.enqueued_at,
                    $7, r.outcome, e.policy, r.last_fault, r.incident, e.keep_input, e.priority,
                    CASE WHEN r.incident OR e.keep_input THEN e.input END,
                    husk_append(e.history, r.spent)
             FROM ended e
             JOIN unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::bool[], $9::text[])
                  AS r(id, pos, attempts, outcome, last_fault, incident, spent) ON r.id = e.id
             JOIN seqs s ON s.pos = r.pos
             RETURNING job_id, seq)
         SELECT job_id, seq FROM inserted",
        &[&ids, &offsets, &attempts, &outcomes, &faults, &incidents, &millis(now), &count, &spent],
    )?;
    debug_assert_eq!(rows.len() as i64, count, "every ended job was live and locked by this transaction");
    let seqs: HashMap<i64, i64> = rows.iter().map(|row| (row.get(0), row.get(1))).collect();
    Ok(endings
        .into_iter()
        .map(|e| (seqs.get(&e.job.id).copied().unwrap_or(0), e))
        .map(|(seq, e)| e.job.terminal(seq, e.outcome, now))
        .collect())
}

/// What a claim took; when it took nothing, when to wake.
#[derive(Debug, Default)]
pub(crate) struct Claimed {
    pub(crate) jobs: Vec<LockedJob>,
    /// When nothing was claimed: the earliest `not_before` after now, of
    /// any topic (gates already open are claimed by their topics' fetches,
    /// not counted here), in milliseconds.
    pub(crate) gate: Option<i64>,
    /// When nothing was claimed: the earliest lock expiry, expired or not,
    /// of any topic, in milliseconds.
    pub(crate) lock: Option<i64>,
    /// When nothing was claimed: whether the last topic asked for is
    /// paused (see [`Fetched::paused`](husk::store::Fetched::paused)).
    pub(crate) paused: bool,
}

impl Claimed {
    /// When a fetch that claimed nothing should look again: the next gate
    /// or lock expiry, whichever comes first.
    pub(crate) fn next_wake(&self) -> Option<SystemTime> {
        self.gate.into_iter().chain(self.lock).min().map(time)
    }

    /// Whether the fetch asked for one topic and found it paused (with
    /// several, only the last one's pause is known: `false`).
    pub(crate) fn paused_alone(&self, request: FetchRequest<'_>) -> bool {
        self.paused && request.topics.len() == 1
    }
}

/// The claim of one topic's jobs, followed by `$select` (what it returns).
/// One topic per claim: the (topic, priority, id) index then yields ids in
/// order, the highest priority first, and the LIMIT stops the scan. `= ANY(ARRAY(...))`, not a join: claimed ids
/// are looked up by key (a join's generic plan scans the whole table). A
/// paused topic claims nothing (`running`, evaluated once). Claims commit
/// asynchronously (see the module docs).
macro_rules! claim_then {
    ($($select:expr),+) => {
        concat!(
            "WITH token AS (SELECT nextval('husk_lock_tokens') AS value,
                                   set_config('synchronous_commit', 'off', true)),
                  running AS (SELECT NOT EXISTS (SELECT 1 FROM husk_paused p WHERE p.topic = $3) AS value),
                  ready AS (SELECT id, priority FROM husk_jobs
                            WHERE state = 0 AND topic = $3 AND (SELECT value FROM running)
                            ORDER BY priority DESC, id LIMIT $4 FOR UPDATE SKIP LOCKED),
                  due AS (SELECT id, priority FROM husk_jobs WHERE state = 1 AND not_before <= $5 AND topic = $3
                                                             AND (SELECT value FROM running)
                          ORDER BY not_before LIMIT $4 FOR UPDATE SKIP LOCKED),
                  claimed AS (
                      UPDATE husk_jobs SET state = 2, not_before = NULL, lock_worker = $1,
                             lock_token = (SELECT value FROM token), lock_expires_at = $2
                      WHERE id = ANY(ARRAY(SELECT id FROM (SELECT * FROM ready UNION ALL SELECT * FROM due) c
                                           ORDER BY priority DESC, id LIMIT $4))
                      RETURNING id, input, attempt, policy, enqueued_at, lock_token, priority) ",
            $($select),+
        )
    };
}

/// A claim of a topic before the last.
const CLAIM: &str = claim_then!("SELECT id, input, attempt, policy, enqueued_at, lock_token, priority FROM claimed");

/// When to wake (see [`Claimed`]): two columns, `$now` the parameter
/// holding now.
macro_rules! wake_times {
    ($now:literal) => {
        concat!(
            "(SELECT min(not_before) FROM husk_jobs WHERE state = 1 AND not_before > ",
            $now,
            "), (SELECT min(lock_expires_at) FROM husk_jobs WHERE state = 2)"
        )
    };
}

/// The last topic's claim: when it claims nothing, one row without a job
/// says when to wake, and whether the topic is paused, so that a fetch that
/// finds nothing costs no second round trip.
const CLAIM_OR_WAKE: &str = claim_then!(
    "SELECT id, input, attempt, policy, enqueued_at, lock_token, priority, NULL::bigint, NULL::bigint, NULL::boolean
     FROM claimed
     UNION ALL
     SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, ",
    wake_times!("$5"),
    ", NOT (SELECT value FROM running) WHERE NOT EXISTS (SELECT 1 FROM claimed)"
);

/// When to wake, for a fetch that claimed in no topic (none asked for, or
/// no job).
const WAKE: &str = concat!("SELECT ", wake_times!("$1"));

/// Claims up to `request.max` jobs, topic by topic: queued jobs and gated
/// jobs whose gate has passed, oldest first; when none, says when to wake.
/// `query` runs a statement (in a transaction or on its own).
pub(crate) fn claim(request: FetchRequest<'_>, now: SystemTime, query: Query<'_>) -> Result<Claimed, PgError> {
    let expires_at = now + request.lock_duration;
    let mut claimed = Claimed::default();
    // Whether a statement said when to wake.
    let mut told = false;
    for (n, topic) in request.topics.iter().enumerate() {
        let remaining = request.max.saturating_sub(claimed.jobs.len());
        if remaining == 0 {
            break;
        }
        let sql = if n + 1 == request.topics.len() { CLAIM_OR_WAKE } else { CLAIM };
        let rows = query(sql, &[&request.worker, &millis(expires_at), topic, &(remaining as i64), &millis(now)])?;
        for row in &rows {
            let Some(id) = row.get::<_, Option<i64>>(0) else {
                // Nothing claimed in the last topic: when to wake, and
                // whether it is paused.
                (claimed.gate, claimed.lock, told) = (row.get(7), row.get(8), true);
                claimed.paused = row.get(9);
                continue;
            };
            let policy: String = row.get(3);
            claimed.jobs.push(LockedJob {
                lock: Lock { job: JobId(id as u64), token: row.get::<_, i64>(5) as u64 },
                topic: topic.clone(),
                input: row.get(1),
                attempt: row.get::<_, i64>(2) as u32,
                policy: serde_json::from_str(&policy)?,
                enqueued_at: time(row.get(4)),
                lock_expires_at: expires_at,
                priority: row.get(6),
            });
        }
    }
    if claimed.jobs.is_empty() && !told {
        // One row, always (a SELECT without FROM).
        let rows = query(WAKE, &[&millis(now)])?;
        if let Some(row) = rows.first() {
            (claimed.gate, claimed.lock) = (row.get(0), row.get(1));
        }
    }
    claimed.jobs.sort_by_key(|j| (std::cmp::Reverse(j.priority), j.lock.job));
    Ok(claimed)
}

pub(crate) fn notify(tx: &mut Tx<'_>, channel: &str, payload: &str) -> Result<(), postgres::Error> {
    tx.execute("SELECT pg_notify($1, $2)", &[&channel, &payload]).map(drop)
}

/// A job's record, live or ended; with its attempts when `with_attempts`
/// (the `history` column read after the usual ones).
pub(crate) fn get_record(tx: &mut Tx<'_>, id: i64, with_attempts: bool) -> Result<Option<JobRecord>, PgError> {
    let attempts = |row: &Row, column: usize| -> Result<Vec<AttemptRecord>, serde_json::Error> {
        if with_attempts { history_of(row.get(column)) } else { Ok(Vec::new()) }
    };
    let live = match with_attempts {
        true => concat!("SELECT ", live_columns!(), ", history FROM husk_jobs WHERE id = $1"),
        false => select_live!("WHERE id = $1"),
    };
    if let Some(row) = tx.query_opt(live, &[&id])? {
        return Ok(Some(JobRecord { attempts: attempts(&row, 13)?, ..live_row(&row).record()? }));
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
    Ok(Some(JobRecord { attempts: attempts(&row, 11)?, ..record_of(&row)? }))
}
#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use husk::fault::Fault;
    use husk::store::AttemptRecord;

    use super::members_but_attempt;

    #[test]
    pub(crate) fn a_record_written_behind_the_rows_attempt_reads_back_whole() {
        let finished_at = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let fault = Fault::new("x.y", b"body with \0 and \"quotes\"".to_vec());
        let record = AttemptRecord {
            attempt: 7,
            plugin_version: Some("abc".into()),
            fault: Some(fault),
            finished_at,
            started_at: Some(finished_at - Duration::from_millis(5)),
            duration_us: Some(4_321),
            fuel: Some(99),
        };
        let written = format!(r#"{{"attempt":{},{}"#, 7, members_but_attempt(&record));
        let read: AttemptRecord = serde_json::from_str(&written).unwrap();
        // Exactly what the record written whole reads back as.
        let whole: AttemptRecord = serde_json::from_str(&super::to_json(&record)).unwrap();
        assert_eq!(read, whole);
        assert_eq!((read.started_at, read.duration_us, read.fuel), (record.started_at, Some(4_321), Some(99)));
        assert_eq!((read.attempt, read.fault.unwrap().code), (7, "x.y".to_owned()));
    }
}
