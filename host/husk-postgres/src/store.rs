//! [`JobStore`] for [`PostgresStore`]: enqueue, fetch and lock, report,
//! cancel, incidents, the outcome log.

use std::sync::Weak;
use std::time::{Duration, SystemTime};

use husk::outcome::{Outcome, TerminalOutcome};
use husk::store::sql::{Expired, LiveRow, QUEUED, RUNNING, continued_policy, depths_of, millis};
use husk::store::{Behaviour, Incidents, PermitLease, Queries, Shared, Supports};
use husk::store::{
    CancelResult, Capped, Depth, DiscardResult, Enqueued, FetchRequest, Fetched, JobId, JobRecord, JobState, JobStore,
    ListFilter, Lock, NewJob, QueueCap, Report, Reported, RetryIncidentResult, StoreError, StoreEvents,
};

use crate::enqueue::insert_jobs;
use crate::listener::Listener;
use crate::pool::{Wake, describe};
use crate::rows::{
    Arm, Ending, arm_all, claim, end_all, get_record, live_row, notify, outcome_row, record_of, select_live,
    select_outcomes,
};
use crate::{PostgresStore, sequence};

/// How often (clock time) a fetch that claims jobs also reclaims expired
/// locks; a fetch that finds nothing to claim always does.
const RECLAIM_EVERY: Duration = Duration::from_secs(1);

impl PostgresStore {
    /// Whether this fetch should also reclaim expired locks: at most once a
    /// second of clock time on the hot path (and always when nothing is
    /// claimable).
    pub(crate) fn reclaim_due(&self, now: SystemTime) -> bool {
        let mut last = self.last_reclaim.lock();
        let due = last.is_none_or(|at| now < at || now >= at + RECLAIM_EVERY);
        if due {
            *last = Some(now);
        }
        due
    }

    /// How many of a topic's fetchers wait in this process (none before the
    /// dispatcher subscribed, or after it is gone).
    fn waiting_here(&self) -> impl Fn(&str) -> u64 + use<> {
        let events = self.events.lock().clone();
        move |topic| events.as_ref().and_then(Weak::upgrade).map_or(0, |events| events.waiting_fetchers(topic))
    }

    /// A fetch in one transaction: reclaims expired locks, claims, and when
    /// nothing was claimed computes when to wake.
    pub(crate) fn fetch_reclaiming(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError> {
        self.run("fetch", |tx| {
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
            let claimed = claim(request, now, &mut |sql, params| tx.query(sql, params))?;
            let (next_wake, paused) = (claimed.next_wake(), claimed.paused_alone(request));
            let mut fetched = Fetched { jobs: claimed.jobs, ..Fetched::default() };
            if fetched.jobs.is_empty() {
                // The caller waits: until the next gate opens or lock expires
                // (of any topic). Expired locks were just reclaimed, so every
                // lock left expires later.
                (fetched.next_wake, fetched.paused) = (next_wake, paused);
            }
            if reclaimed {
                // Attempts were spent and jobs ended: commit durably.
                tx.execute("SELECT set_config('synchronous_commit', 'on', true)", &[])?;
                fetched.ended = end_all(tx, endings, now)?;
                if !arms.is_empty() {
                    tx.wake_fetchers();
                }
            }
            Ok(fetched)
        })
    }

    /// Claims (see [`JobStore::fetch_and_lock`]): on the hot path in
    /// autocommitted statements, reclaiming expired locks when due.
    fn fetch(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError> {
        if !self.reclaim_due(now) {
            // The hot path: claims, each one statement committed on its own;
            // when nothing is claimable, the last says when to wake —
            // unless a lock has expired, which the full path below
            // reclaims.
            let claimed = self.autocommit("fetch", |query| claim(request, now, query))?;
            let fetched = if !claimed.jobs.is_empty() {
                Some(Fetched { jobs: claimed.jobs, ..Fetched::default() })
            } else {
                let expired = claimed.lock.is_some_and(|lock| lock <= millis(now));
                let paused = claimed.paused_alone(request);
                (!expired).then(|| Fetched { next_wake: claimed.next_wake(), paused, ..Fetched::default() })
            };
            if let Some(fetched) = fetched {
                return Ok(fetched);
            }
        }
        self.fetch_reclaiming(request, now)
    }
}

impl JobStore for PostgresStore {
    /// A commit waits for its WAL flush, which one transaction of every
    /// worker's reports shares.
    fn behaviour(&self) -> Behaviour {
        Behaviour { commits_wait_for_a_flush: true, ..Behaviour::default() }
    }

    fn supports(&self) -> Supports<'_> {
        Supports {
            queries: Some(self),
            incidents: Some(self),
            pauses: Some(self),
            pruning: Some(self),
            versions: Some(self),
            shared: Some(self),
        }
    }

    fn enqueue(&self, jobs: Vec<NewJob>, now: SystemTime) -> Result<Vec<Enqueued>, StoreError> {
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        let waiting_here = self.waiting_here();
        self.autocommit("enqueue", |query| {
            let inserted = insert_jobs(&mut *query, &jobs, now)?;
            let wake = elsewhere(&inserted.fetchable, &waiting_here)
                .fold(Wake::None, |wake, (topic, jobs)| wake.and_topic(topic, jobs));
            if let Some(payload) = wake.payload(&self.channels.sender) {
                // After the commit, on the same connection, and committed
                // without waiting for its flush: the jobs are durable
                // already, and a lost wake only leaves the other processes'
                // fetchers to their poll timeout. So a failure is not the
                // enqueue's, which the caller might repeat.
                let sent = query(
                    "SELECT pg_notify($1, $2), set_config('synchronous_commit', 'off', true)",
                    &[&self.channels.jobs, &payload],
                );
                if let Err(error) = sent {
                    let error = describe(&error);
                    tracing::warn!(store = %self.name, %error, "the other processes' fetchers were not woken");
                }
            }
            Ok(inserted.results)
        })
    }

    fn fetch_and_lock(&self, request: FetchRequest<'_>, now: SystemTime) -> Result<Fetched, StoreError> {
        let fetched = self.fetch(request, now)?;
        // Each claimed job's old row version is dead now.
        self.vacuum.left(fetched.jobs.len() as u64);
        Ok(fetched)
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
        let results: Vec<Reported> = results.into_iter().map(|r| r.expect("every report applied")).collect();
        // Each applied report deleted or updated its job's row: a dead version.
        self.vacuum.left(results.iter().filter(|r| !matches!(r, Reported::LockLost)).count() as u64);
        Ok(results)
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

    fn get(&self, id: JobId) -> Result<Option<JobRecord>, StoreError> {
        self.run("get", |tx| get_record(tx, id.0 as i64, true))
    }

    fn outcomes_after(&self, after: u64, limit: usize) -> Result<Vec<TerminalOutcome>, StoreError> {
        self.run("outcomes", |tx| {
            // Only up to what every writer has committed, read first.
            let committed = sequence::committed(tx)?;
            let rows = tx.query(
                select_outcomes!("WHERE seq > $1 AND seq <= $3 ORDER BY seq LIMIT $2"),
                &[&(after as i64), &(limit as i64), &committed],
            )?;
            Ok(rows.iter().map(|r| outcome_row(r).map(|row| row.outcome)).collect::<Result<_, _>>()?)
        })
    }

    fn outcome_head(&self) -> Result<u64, StoreError> {
        self.run("outcome head", |tx| {
            // As far as `outcomes_after` reads.
            let committed = sequence::committed(tx)?;
            let row = tx.query_one("SELECT coalesce(max(seq), 0) FROM husk_outcomes WHERE seq <= $1", &[&committed])?;
            Ok(row.get::<_, i64>(0) as u64)
        })
    }

    fn depths(&self) -> Result<Vec<(String, Depth)>, StoreError> {
        self.run("depths", |tx| {
            let rows =
                tx.query("SELECT topic, state, count(*) FROM husk_jobs GROUP BY topic, state ORDER BY topic", &[])?;
            Ok(depths_of(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect()))
        })
    }
}

impl Queries for PostgresStore {
    fn list(&self, filter: &ListFilter) -> Result<Vec<JobRecord>, StoreError> {
        let limit = filter.limit.unwrap_or(100) as i64;
        let before = filter.before.map(|id| id.0 as i64);
        let state = filter.state.map(|s| match s {
            JobState::Queued => QUEUED,
            JobState::Gated => husk::store::sql::GATED,
            JobState::Running => RUNNING,
            JobState::Terminal => -1,
        });
        let after = filter.enqueued_after.map(millis);
        let until = filter.enqueued_before.map(millis);
        let code = filter.fault_code.as_deref();
        self.run("list", |tx| {
            let mut ids: Vec<i64> = Vec::new();
            if !filter.ended_only() {
                let rows = tx.query(
                    "SELECT id FROM husk_jobs WHERE ($1::text IS NULL OR topic = $1)
                     AND ($2::bigint IS NULL OR state = $2) AND ($4::bigint IS NULL OR id < $4)
                     AND ($5::bigint IS NULL OR enqueued_at >= $5) AND ($6::bigint IS NULL OR enqueued_at < $6)
                     AND ($7::text IS NULL OR strpos(last_fault::json ->> 'code', $7) > 0)
                     AND ($8::boolean IS NULL OR (attempt > 1) = $8)
                     ORDER BY id DESC LIMIT $3",
                    &[&filter.topic, &state, &limit, &before, &after, &until, &code, &filter.retrying],
                )?;
                ids.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
            }
            if !filter.live_only() {
                // A job's latest outcome only (a retried incident has several).
                let kind = filter.outcome.map(|k| k.as_str());
                let rows = tx.query(
                    "SELECT job_id FROM husk_outcomes o WHERE ($1::text IS NULL OR topic = $1)
                     AND ($3::bigint IS NULL OR job_id < $3)
                     AND NOT EXISTS (SELECT 1 FROM husk_jobs j WHERE j.id = o.job_id)
                     AND seq = (SELECT max(seq) FROM husk_outcomes l WHERE l.job_id = o.job_id)
                     AND ($4::text IS NULL OR outcome::json ->> 'kind' = $4)
                     AND ($5::bigint IS NULL OR enqueued_at >= $5) AND ($6::bigint IS NULL OR enqueued_at < $6)
                     AND ($7::text IS NULL OR strpos(last_fault::json ->> 'code', $7) > 0)
                     AND ($8::boolean IS NULL OR (outcome::json ->> 'kind' = 'failed' AND NOT open_incident) = $8)
                     ORDER BY job_id DESC LIMIT $2",
                    &[&filter.topic, &limit, &before, &kind, &after, &until, &code, &filter.discarded],
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

    fn input(&self, id: JobId) -> Result<Option<Vec<u8>>, StoreError> {
        self.autocommit("input", |query| {
            let rows = query(
                "SELECT input FROM husk_jobs WHERE id = $1
                 UNION ALL
                 (SELECT input FROM husk_outcomes WHERE job_id = $1 AND input IS NOT NULL ORDER BY seq DESC LIMIT 1)
                 LIMIT 1",
                &[&(id.0 as i64)],
            )?;
            Ok(rows.first().map(|row| row.get(0)))
        })
    }
}

impl Incidents for PostgresStore {
    fn retry_incident(&self, id: JobId, _now: SystemTime) -> Result<RetryIncidentResult, StoreError> {
        self.run("retry incident", |tx| {
            let id = id.0 as i64;
            let incident = tx.query_opt(
                "SELECT seq, generation, attempts, policy FROM husk_outcomes WHERE job_id = $1 AND open_incident FOR UPDATE",
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
            let (seq, generation, made): (i64, i32, i64) = (incident.get(0), incident.get(1), incident.get(2));
            let policy = continued_policy(incident.get(3), made)?;
            tx.execute(
                "INSERT INTO husk_jobs (id, generation, topic, input, policy, attempt, state, last_fault, enqueued_at,
                                        history, keep_input, priority)
                 SELECT job_id, $2 + 1, topic, input, $3, $4::bigint + 1, 0, last_fault, enqueued_at, history,
                        keep_input, priority
                 FROM husk_outcomes WHERE seq = $1",
                &[&seq, &generation, &policy, &made],
            )?;
            tx.execute("UPDATE husk_outcomes SET open_incident = FALSE, input = NULL WHERE seq = $1", &[&seq])?;
            tx.wake_fetchers();
            Ok(RetryIncidentResult::Requeued)
        })
    }

    fn open_incidents(&self) -> Result<Vec<JobRecord>, StoreError> {
        self.run("incidents", |tx| {
            let rows = tx.query(select_outcomes!("WHERE open_incident ORDER BY job_id"), &[])?;
            Ok(rows.iter().map(record_of).collect::<Result<_, _>>()?)
        })
    }

    fn open_incident_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        self.run("incident counts", |tx| {
            let rows = tx.query(
                "SELECT topic, count(*) FROM husk_outcomes WHERE open_incident GROUP BY topic ORDER BY topic",
                &[],
            )?;
            Ok(rows.iter().map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1) as u64)).collect())
        })
    }

    fn discard_incident(&self, id: JobId) -> Result<DiscardResult, StoreError> {
        self.run("discard incident", |tx| {
            let id = id.0 as i64;
            let closed = tx.execute(
                "UPDATE husk_outcomes SET open_incident = FALSE, input = CASE WHEN keep_input THEN input END
                 WHERE job_id = $1 AND open_incident",
                &[&id],
            )?;
            if closed == 1 {
                return Ok(DiscardResult::Discarded);
            }
            let known: bool = tx
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM husk_outcomes WHERE job_id = $1)
                         OR EXISTS (SELECT 1 FROM husk_jobs WHERE id = $1)",
                    &[&id],
                )?
                .get(0);
            Ok(if known { DiscardResult::NotAnIncident } else { DiscardResult::NotFound })
        })
    }
}

impl Shared for PostgresStore {
    fn enqueue_capped(&self, jobs: Vec<NewJob>, cap: &QueueCap<'_>, now: SystemTime) -> Result<Capped, StoreError> {
        self.run("enqueue", |tx| {
            // A transaction-scoped lock per tenant: its capped enqueues, in
            // every process, count and insert one after another. Each state
            // is counted on its own partial index.
            tx.execute("SELECT pg_advisory_xact_lock(1752331117, hashtext($1))", &[&cap.tenant])?;
            let row = tx.query_one(
                "SELECT (SELECT count(*) FROM husk_jobs WHERE state = 0 AND topic = ANY($1))
                      + (SELECT count(*) FROM husk_jobs WHERE state = 1 AND topic = ANY($1))
                      + (SELECT count(*) FROM husk_jobs WHERE state = 2 AND topic = ANY($1))",
                &[&cap.topics],
            )?;
            let live = row.get::<_, i64>(0).max(0) as u64;
            if live + jobs.len() as u64 > cap.max {
                return Ok(Capped::Full { live });
            }
            let inserted = insert_jobs(&mut |sql, params| tx.query(sql, params), &jobs, now)?;
            for (topic, jobs) in elsewhere(&inserted.fetchable, &self.waiting_here()) {
                tx.wake_topic(topic, jobs);
            }
            Ok(Capped::Enqueued(inserted.results))
        })
    }

    fn acquire_permits(&self, lease: &PermitLease<'_>, now: SystemTime) -> Result<usize, StoreError> {
        let PermitLease { tenant, holder, held, want, limit, until } = *lease;
        self.autocommit("lease permits", |query| {
            let rows = query(
                "SELECT husk_acquire($1, $2, $3, $4, $5, $6, $7)",
                &[&tenant, &holder, &(held as i64), &(want as i64), &(limit as i64), &millis(until), &millis(now)],
            )?;
            Ok(rows.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as usize))
        })
    }

    fn release_permits(&self, tenant: &str, holder: &str, held: usize, until: SystemTime) -> Result<(), StoreError> {
        self.autocommit("return permits", |query| {
            query(
                "WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true))
                 UPDATE husk_permits SET held = $3, expires_at = $4
                 WHERE tenant = $1 AND holder = $2 AND (SELECT true FROM relaxed)",
                &[&tenant, &holder, &(held as i64), &millis(until)],
            )?;
            Ok(())
        })
    }

    fn permits_leased(&self, tenant: &str, now: SystemTime) -> Result<usize, StoreError> {
        self.run("leased permits", |tx| {
            let row = tx.query_one(
                "SELECT coalesce(sum(held), 0)::BIGINT FROM husk_permits WHERE tenant = $1 AND expires_at > $2",
                &[&tenant, &millis(now)],
            )?;
            Ok(row.get::<_, i64>(0) as usize)
        })
    }

    fn subscribe(&self, events: Weak<dyn StoreEvents>) {
        *self.events.lock() = Some(events.clone());
        let mut listener = self.listener.lock();
        if listener.is_none() {
            *listener = Some(Listener::start(self.config.clone(), self.name.clone(), self.channels.clone(), events));
        }
    }
}

/// The wakes other processes get for `fetchable` new jobs (by topic): the
/// jobs more than this process's waiting fetchers (`waiting_here`) take;
/// its dispatcher wakes those.
fn elsewhere<'a>(
    fetchable: &'a [(String, u64)],
    waiting_here: &'a dyn Fn(&str) -> u64,
) -> impl Iterator<Item = (&'a str, u64)> {
    fetchable
        .iter()
        .map(|(topic, jobs)| (topic.as_str(), jobs.saturating_sub(waiting_here(topic))))
        .filter(|(_, jobs)| *jobs > 0)
}
