//! Enqueue in one statement: the ids drawn, the idempotency keys taken, the
//! rows inserted and the other processes' fetchers woken, in one round trip
//! (one commit when it runs on its own). A key is taken by the first job
//! of the call that has it, in key order (so two calls taking overlapping
//! keys wait for each other instead of deadlocking); a key taken before
//! the statement names its job. A key another transaction took while this
//! statement ran is invisible to it (its snapshot is older): those few are
//! read by one more statement, which sees that commit.

use std::collections::HashMap;
use std::time::SystemTime;

use postgres::types::ToSql;

use husk::store::sql::{QUEUED, armed_state, millis, to_json};
use husk::store::{Enqueued, JobId, NewJob};

use crate::pool::{PgError, QueryResult};

/// A statement runner: a transaction's, or a connection's in autocommit.
pub(crate) type Query<'q> = dyn FnMut(&'static str, &[&(dyn ToSql + Sync)]) -> QueryResult + 'q;

/// Whom an enqueue wakes in other processes (one `NOTIFY`, sent when the
/// statement's transaction commits; see `pool::Wake` for the payload).
pub(crate) struct Wakes<'a> {
    /// The jobs channel.
    pub(crate) channel: &'a str,
    /// This store's mark (its own listener ignores its wakes).
    pub(crate) sender: &'a str,
    /// How many of a topic's fetchers wait in this process: woken by its
    /// dispatcher, not by the `NOTIFY`.
    pub(crate) waiting_here: &'a dyn Fn(&str) -> u64,
}

/// Inserts `jobs` (see [`husk::store::JobStore::enqueue`]) through `query`.
pub(crate) fn insert_jobs(
    query: &mut Query<'_>,
    jobs: &[NewJob],
    now: SystemTime,
    wakes: &Wakes<'_>,
) -> Result<Vec<Enqueued>, PgError> {
    let count = jobs.len() as i64;
    let topics: Vec<&str> = jobs.iter().map(|j| j.topic.as_str()).collect();
    let inputs: Vec<&[u8]> = jobs.iter().map(|j| j.input.as_slice()).collect();
    let policies: Vec<String> = jobs.iter().map(|j| to_json(&j.policy)).collect();
    let (states, gates): (Vec<i64>, Vec<Option<i64>>) = jobs.iter().map(|j| armed_state(j.not_before, now)).unzip();
    let keys: Vec<Option<&str>> = jobs.iter().map(|j| j.key.as_deref()).collect();
    // One topic: wake as many of its fetchers elsewhere as it has new
    // fetchable jobs beyond those waiting here. Several: wake all (a
    // combined call of several API requests; rare).
    let one_topic = topics.iter().all(|t| *t == topics[0]).then_some(topics[0]);
    let waiting = one_topic.map_or(0, |topic| (wakes.waiting_here)(topic) as i64);
    let fetchable_now = states.contains(&QUEUED);
    let rows = query(
        r#"WITH ids AS (
               SELECT id, row_number() OVER (ORDER BY id) AS ord
               FROM (SELECT nextval('husk_jobs_id_seq') AS id FROM generate_series(1, $1::bigint)) drawn),
           n AS (
               SELECT u.*, ids.id
               FROM unnest($2::text[], $3::bytea[], $4::text[], $5::bigint[], $6::bigint[], $7::text[])
                    WITH ORDINALITY AS u(topic, input, policy, state, not_before, key, ord)
               JOIN ids ON ids.ord = u.ord),
           k AS (
               INSERT INTO husk_keys (key, job_id)
               SELECT key, id FROM (SELECT DISTINCT ON (key) key, id FROM n WHERE key IS NOT NULL
                                    ORDER BY key, ord) firsts
               ORDER BY key
               ON CONFLICT (key) DO NOTHING
               RETURNING key, job_id),
           ins AS (
               INSERT INTO husk_jobs (id, topic, input, policy, attempt, state, not_before, enqueued_at)
               SELECT id, topic, input, policy, 1, state, not_before, $8 FROM n
               WHERE key IS NULL OR id IN (SELECT job_id FROM k)
               RETURNING state),
           woke AS (
               SELECT pg_notify($9, CASE WHEN $11::text IS NULL THEN $10
                                         ELSE $10 || ' ' || (fetchable - $12) || ' ' || $11 END)
               FROM (SELECT count(*) AS fetchable FROM ins WHERE state = 0) f
               WHERE $13 AND fetchable > $12)
       SELECT n.ord, n.id, n.key, k.job_id, e.job_id, (SELECT count(*) FROM woke)
       FROM n LEFT JOIN k ON k.key = n.key LEFT JOIN husk_keys e ON e.key = n.key
       ORDER BY n.ord"#,
        &[
            &count,
            &topics,
            &inputs,
            &policies,
            &states,
            &gates,
            &keys,
            &millis(now),
            &wakes.channel,
            &wakes.sender,
            &one_topic,
            &waiting,
            &fetchable_now,
        ],
    )?;
    let mut results = Vec::with_capacity(rows.len());
    // Slots whose key another transaction took while the statement ran.
    let mut unseen: Vec<(usize, String)> = Vec::new();
    for (slot, row) in rows.iter().enumerate() {
        let id: i64 = row.get(1);
        let key: Option<String> = row.get(2);
        let (taken, existing): (Option<i64>, Option<i64>) = (row.get(3), row.get(4));
        results.push(match (key, taken, existing) {
            (None, ..) => Enqueued { id: JobId(id as u64), created: true },
            // Taken here: by this job, or by the first of the call with it.
            (Some(_), Some(taker), _) => Enqueued { id: JobId(taker as u64), created: taker == id },
            (Some(_), None, Some(owner)) => Enqueued { id: JobId(owner as u64), created: false },
            (Some(key), None, None) => {
                unseen.push((slot, key));
                Enqueued { id: JobId(0), created: false }
            }
        });
    }
    if !unseen.is_empty() {
        let keys: Vec<&str> = unseen.iter().map(|(_, key)| key.as_str()).collect();
        let owners: HashMap<String, i64> = query("SELECT key, job_id FROM husk_keys WHERE key = ANY($1)", &[&keys])?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        for (slot, key) in unseen {
            // Its job ended and was pruned in between: nothing names it.
            let owner = owners.get(&key).ok_or_else(|| PgError::KeyRace(key.clone()))?;
            results[slot] = Enqueued { id: JobId(*owner as u64), created: false };
        }
    }
    Ok(results)
}
