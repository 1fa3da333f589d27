//! Reports: completions in one autocommitted statement, every other
//! decision after locking its job.

use std::collections::HashMap;
use std::time::SystemTime;

use husk::outcome::{Outcome, TerminalOutcome};
use husk::store::sql::{LiveRow, millis, time, to_json};
use husk::store::{JobId, Lock, Report, Reported, StoreError};

use crate::PostgresStore;
use crate::rows::{Arm, Ending, arm_all, end_all, live_row, members_but_attempt, select_live};

impl PostgresStore {
    /// Completes, in one statement committed on its own, every
    /// `Report::Completed` whose lock is held and whose job has no cancel
    /// asked: deletes the jobs and logs their outcomes. Returns how many,
    /// and each report's result (`None`: not applied here).
    pub(crate) fn report_completed(
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
                let record = report.attempt_record(0, now).expect("a completion spends its attempt");
                spent.push(members_but_attempt(&record));
            }
        }
        if ids.is_empty() {
            return Ok((0, results));
        }
        // The DELETE checks the lock itself, so no prior SELECT ... FOR
        // UPDATE is needed; seqs are drawn for the rows it deleted, under
        // this statement's writer mark (see `crate::sequence`).
        let sql = r#"WITH r AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $6::text[])
                                          AS r(slot, id, token, outcome, spent)),
             ended AS (
                 DELETE FROM husk_jobs j USING r
                 WHERE j.id = r.id AND j.state = 2 AND j.lock_token = r.token AND j.lock_expires_at > $5
                       AND NOT j.cancel_requested
                 RETURNING j.id, j.generation, j.topic, j.attempt, j.enqueued_at, j.policy, j.last_fault,
                           j.keep_input, j.priority, CASE WHEN j.keep_input THEN j.input END AS input,
                           r.outcome, r.slot,
                           husk_append(j.history, '[{"attempt":' || j.attempt || ',' || r.spent || ']') AS history),
             seqs AS (
                 SELECT seq, row_number() OVER (ORDER BY seq) AS pos
                 FROM husk_next_seqs((SELECT count(*) FROM ended)) AS seq),
             numbered AS (
                 SELECT e.*, s.seq
                 FROM (SELECT ended.*, row_number() OVER (ORDER BY ended.slot) AS pos FROM ended) e
                 JOIN seqs s ON s.pos = e.pos),
             inserted AS (
                 INSERT INTO husk_outcomes (seq, job_id, generation, topic, attempts, enqueued_at, finished_at,
                                            outcome, policy, last_fault, open_incident, keep_input, priority,
                                            input, history)
                 SELECT seq, id, generation, topic, attempt, enqueued_at, $5, outcome, policy, last_fault, FALSE,
                        keep_input, priority, input, history
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
    pub(crate) fn report_locked(
        &self,
        reports: Vec<(Lock, Report)>,
        now: SystemTime,
    ) -> Result<Vec<Reported>, StoreError> {
        self.run("report", |tx| {
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
                tx.wake_fetchers();
            }
            for (slot, ended) in ending_slots.into_iter().zip(end_all(tx, endings, now)?) {
                results[slot] = Reported::Ended(Box::new(ended));
            }
            Ok(results)
        })
    }
}
