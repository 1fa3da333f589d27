//! Enqueue: new jobs and their idempotency keys written by one statement.
//!
//! An enqueue used to be a transaction of five round trips (`BEGIN`, the
//! ids, the keys, the rows, `COMMIT`); under one job per HTTP request, each
//! round trip costs the server a wake, a read and a write, which were most
//! of its time. One statement, committed on its own, now draws the ids,
//! takes the keys and writes the rows.
//!
//! A key is taken with `INSERT ... ON CONFLICT DO NOTHING`: of two enqueues
//! of one key, the second waits on the first's row until it commits (then
//! skips it) or rolls back (then takes the key). The statement also reads
//! the holder of each key it did not take, but from its snapshot, taken
//! before it waited: a holder that committed meanwhile is read by a second
//! statement, and a key whose holder is gone by then (its outcome pruned)
//! is tried again. Keys are inserted in sorted order, so that enqueues with
//! overlapping keys wait on each other in one order and never deadlock.

use std::collections::HashMap;
use std::time::SystemTime;

use husk::store::sql::{QUEUED, armed_state, millis, to_json};
use husk::store::{Enqueued, JobId, NewJob};

use crate::pool::{PgError, Query};

/// Draws an id per job, takes the keys and writes the rows that took theirs
/// (or have none): `husk_enqueue` (migration 8, which holds the statement;
/// see `crate::migrations` for why a function). `slot` is the jobs' order;
/// a job's id is drawn in that order, so a call's jobs are claimed in it.
/// Returns, per job: its slot, its id, whether it was written, and if not
/// the key's holder when the statement's snapshot has it.
const INSERT: &str = "SELECT slot, id, created, holder FROM husk_enqueue($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// [`INSERT`] for one job, its values as scalars: the body of
/// `husk_enqueue` for an array of one. Under one job per HTTP request most
/// calls hold one job; this statement's generic plan costs what a custom
/// one does, so PostgreSQL plans it once per connection without the
/// function, whose call (a PL/pgSQL frame, a setting saved and restored, a
/// result set materialized) cost as much as the statement inside it:
/// 0.225 ms a call against 0.117 (`pg_stat_statements`, three `husk serve`
/// processes enqueuing one job per request).
const INSERT_ONE: &str = "
    WITH n AS MATERIALIZED (SELECT nextval('husk_jobs_id_seq') AS id),
         keyed AS (
             INSERT INTO husk_keys (key, job_id) SELECT $6::text, id FROM n WHERE $6::text IS NOT NULL
             ON CONFLICT (key) DO NOTHING RETURNING key),
         marked AS MATERIALIZED (SELECT id, ($6::text IS NULL OR EXISTS (SELECT 1 FROM keyed)) AS created FROM n),
         written AS (
             INSERT INTO husk_jobs (id, topic, input, policy, attempt, state, not_before, enqueued_at, keep_input,
                                    priority)
             SELECT id, $1::text, $2::bytea, $3::text, 1, $4::bigint, $5::bigint, $9::bigint, $7::boolean,
                    $8::smallint
             FROM marked WHERE created)
    SELECT 1::bigint, marked.id, marked.created,
           CASE WHEN marked.created THEN NULL
                ELSE (SELECT k.job_id FROM husk_keys k WHERE k.key = $6::text) END
    FROM marked";

/// What an enqueue wrote.
pub(crate) struct Inserted {
    /// Per job, in the call's order.
    pub(crate) results: Vec<Enqueued>,
    /// How many fetchable jobs (no gate) it wrote per topic.
    pub(crate) fetchable: Vec<(String, u64)>,
}

/// Writes `jobs` (see [`JobStore::enqueue`](husk::store::JobStore::enqueue)
/// and the module docs) through `query`: autocommitted statements, or a
/// transaction's. A job whose key an earlier job of the call has gets that
/// job's result, uncreated.
pub(crate) fn insert_jobs(query: Query<'_>, jobs: &[NewJob], now: SystemTime) -> Result<Inserted, PgError> {
    let mut results: Vec<Option<Enqueued>> = vec![None; jobs.len()];
    // The first job of this call with a key takes it for the others.
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut pending: Vec<usize> = Vec::with_capacity(jobs.len());
    for (slot, job) in jobs.iter().enumerate() {
        match job.key.as_deref() {
            Some(key) if first.contains_key(key) => {}
            Some(key) => {
                first.insert(key, slot);
                pending.push(slot);
            }
            None => pending.push(slot),
        }
    }
    let mut fetchable: Vec<(String, u64)> = Vec::new();
    while !pending.is_empty() {
        let sent: Vec<&NewJob> = pending.iter().map(|&slot| &jobs[slot]).collect();
        let topics: Vec<&str> = sent.iter().map(|j| j.topic.as_str()).collect();
        let inputs: Vec<&[u8]> = sent.iter().map(|j| j.input.as_slice()).collect();
        let policies: Vec<String> = sent.iter().map(|j| to_json(&j.policy)).collect();
        let (states, gates): (Vec<i64>, Vec<Option<i64>>) = sent.iter().map(|j| armed_state(j.not_before, now)).unzip();
        let keys: Vec<Option<&str>> = sent.iter().map(|j| j.key.as_deref()).collect();
        let keep: Vec<bool> = sent.iter().map(|j| j.keep_input).collect();
        let priorities: Vec<i16> = sent.iter().map(|j| j.priority).collect();
        let now = millis(now);
        let rows = match sent.len() {
            1 => query(
                INSERT_ONE,
                &[
                    &topics[0],
                    &inputs[0],
                    &policies[0],
                    &states[0],
                    &gates[0],
                    &keys[0],
                    &keep[0],
                    &priorities[0],
                    &now,
                ],
            )?,
            _ => query(INSERT, &[&topics, &inputs, &policies, &states, &gates, &keys, &keep, &priorities, &now])?,
        };
        // Keys held by an enqueue that committed after this statement began.
        let mut unseen: Vec<usize> = Vec::new();
        for row in &rows {
            let at = row.get::<_, i64>(0) as usize - 1;
            let slot = pending[at];
            let (id, created, holder): (i64, bool, Option<i64>) = (row.get(1), row.get(2), row.get(3));
            results[slot] = match (created, holder) {
                (true, _) => {
                    if states[at] == QUEUED {
                        count(&mut fetchable, topics[at]);
                    }
                    Some(Enqueued { id: JobId(id as u64), created: true })
                }
                (false, Some(holder)) => Some(Enqueued { id: JobId(holder as u64), created: false }),
                (false, None) => {
                    unseen.push(slot);
                    None
                }
            };
        }
        pending = Vec::new();
        if !unseen.is_empty() {
            let keys: Vec<&str> = unseen.iter().filter_map(|&slot| jobs[slot].key.as_deref()).collect();
            let holders: HashMap<String, i64> =
                query("SELECT key, job_id FROM husk_keys WHERE key = ANY($1)", &[&keys])?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect();
            for slot in unseen {
                match jobs[slot].key.as_deref().and_then(|key| holders.get(key)) {
                    Some(&holder) => results[slot] = Some(Enqueued { id: JobId(holder as u64), created: false }),
                    // Released since: the next round takes it.
                    None => pending.push(slot),
                }
            }
        }
    }
    let results = jobs
        .iter()
        .enumerate()
        .map(|(slot, job)| {
            let taker = job.key.as_deref().map_or(slot, |key| first[key]);
            let taken = results[taker].expect("every job that takes a key has a result");
            if taker == slot { taken } else { Enqueued { id: taken.id, created: false } }
        })
        .collect();
    Ok(Inserted { results, fetchable })
}

/// One more job of `topic` in `counts`.
fn count(counts: &mut Vec<(String, u64)>, topic: &str) {
    match counts.iter_mut().find(|(t, _)| t == topic) {
        Some((_, n)) => *n += 1,
        None => counts.push((topic.to_owned(), 1)),
    }
}
