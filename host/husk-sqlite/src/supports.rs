//! The capabilities the SQLite store supports beyond the queue: listing,
//! incidents, pauses, pruning and kept plugin versions.

use crate::rows::{get_record, outcome_row, record_of};
use husk::store::sql::{
    GATED, OUTCOME_COLUMNS, QUEUED, RUNNING, continued_policy, millis, prune_candidates, prune_cutoffs, stored_version,
    time,
};
use husk::store::{
    DiscardResult, JobId, JobRecord, JobState, ListFilter, Pruned, Retention, RetryIncidentResult, StoreError,
    StoredVersion, TopicVersion,
};
use husk::store::{Incidents, Pauses, Pruning, Queries, VersionToKeep, Versions};
use husk::versions::Rollback;
use rusqlite::{Connection, OptionalExtension, params};
use std::time::SystemTime;

use crate::SqliteStore;

impl Queries for SqliteStore {
    fn list(&self, filter: &ListFilter) -> Result<Vec<JobRecord>, StoreError> {
        let filter = filter.clone();
        self.read("list", move |conn| list(conn, &filter))
    }

    fn input(&self, id: JobId) -> Result<Option<Vec<u8>>, StoreError> {
        self.read("input", move |conn| {
            conn.prepare_cached(
                "SELECT input FROM jobs WHERE id = ?1
                 UNION ALL
                 SELECT * FROM (SELECT input FROM outcomes WHERE job_id = ?1 AND input IS NOT NULL ORDER BY seq DESC LIMIT 1)
                 LIMIT 1",
            )
            .and_then(|mut s| s.query_row([id.0 as i64], |row| row.get(0)).optional())
        })
    }
}

impl Incidents for SqliteStore {
    fn retry_incident(&self, id: JobId, _now: SystemTime) -> Result<RetryIncidentResult, StoreError> {
        self.write(move |tx| {
            let id = id.0 as i64;
            let incident: Option<(i64, i64, i64, String)> = tx
                .query_row(
                    "SELECT seq, generation, attempts, policy FROM outcomes WHERE job_id = ?1 AND open_incident = 1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )
                .optional()?;
            let Some((seq, generation, made, policy)) = incident else {
                let known: bool = tx.query_row(
                    "SELECT EXISTS (SELECT 1 FROM outcomes WHERE job_id = ?1) OR EXISTS (SELECT 1 FROM jobs WHERE id = ?1)",
                    [id],
                    |r| r.get(0),
                )?;
                return Ok(if known { RetryIncidentResult::NotAnIncident } else { RetryIncidentResult::NotFound });
            };
            tx.execute(
                "INSERT INTO jobs (id, generation, topic, input, policy, attempt, state, last_fault, enqueued_at, history,
                                   keep_input, priority)
                 SELECT job_id, ?2 + 1, topic, input, ?3, ?4 + 1, 0, last_fault, enqueued_at, history, keep_input,
                        priority
                 FROM outcomes WHERE seq = ?1",
                params![seq, generation, continued_policy(&policy, made).map_err(crate::rows::json_err)?, made],
            )?;
            tx.execute("UPDATE outcomes SET open_incident = 0, input = NULL WHERE seq = ?1", [seq])?;
            Ok(RetryIncidentResult::Requeued)
        })
    }

    fn open_incidents(&self) -> Result<Vec<JobRecord>, StoreError> {
        self.read("incidents", move |conn| {
            let rows = conn
                .prepare_cached(&format!(
                    "SELECT {OUTCOME_COLUMNS} FROM outcomes WHERE open_incident = 1 ORDER BY job_id"
                ))?
                .query_map([], outcome_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            rows.into_iter().map(record_of).collect()
        })
    }

    fn open_incident_counts(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let counts: Vec<(String, i64)> = self.read("incident counts", move |conn| {
            conn.prepare_cached(
                "SELECT topic, count(*) FROM outcomes WHERE open_incident = 1 GROUP BY topic ORDER BY topic",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect()
        })?;
        Ok(counts.into_iter().map(|(topic, n)| (topic, n as u64)).collect())
    }

    fn discard_incident(&self, id: JobId) -> Result<DiscardResult, StoreError> {
        self.write(move |tx| {
            let id = id.0 as i64;
            let closed = tx
                .prepare_cached(
                    "UPDATE outcomes SET open_incident = 0, input = CASE WHEN keep_input THEN input END
                     WHERE job_id = ?1 AND open_incident = 1",
                )?
                .execute([id])?;
            if closed == 1 {
                return Ok(DiscardResult::Discarded);
            }
            let known: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?1) OR EXISTS (SELECT 1 FROM outcomes WHERE job_id = ?1)",
                [id],
                |r| r.get(0),
            )?;
            Ok(if known { DiscardResult::NotAnIncident } else { DiscardResult::NotFound })
        })
    }
}

impl Pauses for SqliteStore {
    fn set_paused(&self, topic: &str, paused: bool) -> Result<bool, StoreError> {
        let topic = topic.to_owned();
        self.write(move |tx| {
            let sql = if paused {
                "INSERT INTO paused (topic) VALUES (?1) ON CONFLICT DO NOTHING"
            } else {
                "DELETE FROM paused WHERE topic = ?1"
            };
            Ok(tx.prepare_cached(sql)?.execute([&topic])? == 1)
        })
    }

    fn paused(&self) -> Result<Vec<String>, StoreError> {
        self.read("paused topics", move |conn| {
            conn.prepare_cached("SELECT topic FROM paused ORDER BY topic")
                .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        })
    }
}

impl Pruning for SqliteStore {
    fn prune(&self, retention: &Retention, now: SystemTime, batch: usize) -> Result<Pruned, StoreError> {
        let [completed, failed, others, latest] = prune_cutoffs(retention, now);
        self.write(move |tx| {
            let pruned: Vec<(i64, i64)> = tx
                .prepare_cached(concat!(
                    "DELETE FROM outcomes WHERE seq IN (",
                    prune_candidates!("outcomes", "?"),
                    ") RETURNING seq, job_id"
                ))?
                .query_map(params![completed, failed, others, latest, batch as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let mut keys = 0;
            let mut forget = tx.prepare_cached(
                "DELETE FROM keys WHERE job_id = ?1 AND NOT EXISTS (SELECT 1 FROM jobs WHERE id = ?1)
                   AND NOT EXISTS (SELECT 1 FROM outcomes WHERE job_id = ?1)",
            )?;
            for (_, job) in &pruned {
                keys += forget.execute([job])? as u64;
            }
            if let Some(last) = pruned.iter().map(|(seq, _)| *seq).max() {
                tx.prepare_cached("UPDATE meta SET value = max(value, ?1) WHERE key = 'pruned_through'")?
                    .execute([last])?;
            }
            Ok(Pruned { outcomes: pruned.len() as u64, keys })
        })
    }

    fn pruned_through(&self) -> Result<u64, StoreError> {
        self.read("pruned outcomes", move |conn| {
            conn.prepare_cached("SELECT value FROM meta WHERE key = 'pruned_through'")
                .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
                .map(|v| v as u64)
        })
    }
}

impl Versions for SqliteStore {
    fn put_version(&self, put: &VersionToKeep<'_>) -> Result<(), StoreError> {
        let VersionToKeep { topic, version, component, config, keep } = *put;
        let (topic, version, component) = (topic.to_owned(), version.clone(), component.to_vec());
        self.write(move |tx| {
            let seq: i64 = tx
                .prepare_cached(
                    "INSERT INTO topic_versions (topic, current, config, seq)
                     VALUES (?1, ?2, CASE WHEN ?3 THEN ?2 END, 1)
                     ON CONFLICT (topic) DO UPDATE SET current = excluded.current,
                         config = coalesce(excluded.config, topic_versions.config), seq = topic_versions.seq + 1,
                         rolled_back_by = NULL, rolled_back_at = NULL
                     RETURNING seq",
                )?
                .query_row(params![topic, version.digest, config], |r| r.get(0))?;
            let stamp = &version.stamp;
            tx.prepare_cached(
                "INSERT INTO plugin_versions (topic, digest, component, origin, deployed_by, deployed_at, seq)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (topic, digest) DO UPDATE SET origin = excluded.origin,
                     deployed_by = excluded.deployed_by, deployed_at = excluded.deployed_at, seq = excluded.seq",
            )?
            .execute(params![topic, version.digest, component, stamp.origin.as_str(), stamp.by, millis(stamp.at), seq])?;
            tx.prepare_cached(
                "DELETE FROM plugin_versions WHERE topic = ?1 AND seq < (
                     SELECT min(seq) FROM (SELECT seq FROM plugin_versions WHERE topic = ?1 ORDER BY seq DESC LIMIT (SELECT ?2)))",
            )?
            .execute(params![topic, keep.max(1) as i64])?;
            Ok(())
        })
    }

    fn set_current_version(&self, topic: &str, version: &StoredVersion) -> Result<bool, StoreError> {
        let (topic, version) = (topic.to_owned(), version.clone());
        self.write(move |tx| {
            let stamp = &version.stamp;
            let updated = tx
                .prepare_cached(
                    "UPDATE topic_versions SET current = ?2, rolled_back_by = ?3, rolled_back_at = ?4
                     WHERE topic = ?1 AND EXISTS (SELECT 1 FROM plugin_versions WHERE topic = ?1 AND digest = ?2)",
                )?
                .execute(params![topic, version.digest, stamp.by, millis(stamp.at)])?;
            Ok(updated == 1)
        })
    }

    fn current_versions(&self) -> Result<Vec<TopicVersion>, StoreError> {
        self.read("current plugin versions", move |conn| {
            conn.prepare_cached(
                "SELECT topic, current, config, rolled_back_by, rolled_back_at FROM topic_versions ORDER BY topic",
            )
            .and_then(|mut s| {
                s.query_map([], |r| {
                    let (by, at): (Option<String>, Option<i64>) = (r.get(3)?, r.get(4)?);
                    let rolled_back = at.map(|at| Rollback { by, at: time(at) });
                    Ok(TopicVersion { topic: r.get(0)?, current: r.get(1)?, config: r.get(2)?, rolled_back })
                })?
                .collect()
            })
        })
    }

    fn kept_versions(&self, topic: &str) -> Result<Vec<StoredVersion>, StoreError> {
        let topic = topic.to_owned();
        self.read("plugin versions", move |conn| {
            conn.prepare_cached(
                "SELECT digest, origin, deployed_by, deployed_at FROM plugin_versions WHERE topic = ?1 ORDER BY seq DESC",
            )
            .and_then(|mut s| {
                s.query_map([topic], |r| {
                    let origin: String = r.get(1)?;
                    stored_version(r.get(0)?, &origin, r.get(2)?, r.get(3)?)
                        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, e.into()))
                })?
                .collect()
            })
        })
    }

    fn version_component(&self, topic: &str, digest: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let (topic, digest) = (topic.to_owned(), digest.to_owned());
        self.read("plugin component", move |conn| {
            conn.prepare_cached("SELECT component FROM plugin_versions WHERE topic = ?1 AND digest = ?2")
                .and_then(|mut s| s.query_row([topic, digest], |r| r.get(0)).optional())
        })
    }
}

/// The jobs `filter` selects, newest first (see [`Queries::list`](husk::store::Queries::list)).
fn list(conn: &Connection, filter: &ListFilter) -> rusqlite::Result<Vec<JobRecord>> {
    let limit = filter.limit.unwrap_or(100) as i64;
    let before = filter.before.map(|id| id.0 as i64);
    let state = filter.state.map(|s| match s {
        JobState::Queued => QUEUED,
        JobState::Gated => GATED,
        JobState::Running => RUNNING,
        JobState::Terminal => -1,
    });
    let after = filter.enqueued_after.map(millis);
    let until = filter.enqueued_before.map(millis);
    let code = filter.fault_code.as_deref();
    let live_ids: Vec<i64> = if filter.ended_only() {
        Vec::new()
    } else {
        conn.prepare_cached(
            "SELECT id FROM jobs WHERE (?1 IS NULL OR topic = ?1) AND (?2 IS NULL OR state = ?2)
             AND (?4 IS NULL OR id < ?4) AND (?5 IS NULL OR enqueued_at >= ?5) AND (?6 IS NULL OR enqueued_at < ?6)
             AND (?7 IS NULL OR instr(json_extract(last_fault, '$.code'), ?7) > 0)
             AND (?8 IS NULL OR (attempt > 1) = ?8)
             ORDER BY id DESC LIMIT (SELECT ?3)",
        )
        .and_then(|mut s| {
            let retrying = filter.retrying;
            s.query_map(params![filter.topic, state, limit, before, after, until, code, retrying], |r| r.get(0))?
                .collect()
        })?
    };
    let ended_ids: Vec<i64> = if filter.live_only() {
        Vec::new()
    } else {
        // A job's latest outcome only (a retried incident has several).
        conn.prepare_cached(
            "SELECT job_id FROM outcomes o WHERE (?1 IS NULL OR topic = ?1) AND (?3 IS NULL OR job_id < ?3)
             AND job_id NOT IN (SELECT id FROM jobs)
             AND seq = (SELECT max(seq) FROM outcomes l WHERE l.job_id = o.job_id)
             AND (?4 IS NULL OR json_extract(outcome, '$.kind') = ?4)
             AND (?5 IS NULL OR enqueued_at >= ?5) AND (?6 IS NULL OR enqueued_at < ?6)
             AND (?7 IS NULL OR instr(json_extract(last_fault, '$.code'), ?7) > 0)
             AND (?8 IS NULL OR (json_extract(outcome, '$.kind') = 'failed' AND open_incident = 0) = ?8)
             ORDER BY job_id DESC LIMIT (SELECT ?2)",
        )
        .and_then(|mut s| {
            let kind = filter.outcome.map(|k| k.as_str());
            let discarded = filter.discarded;
            s.query_map(params![filter.topic, limit, before, kind, after, until, code, discarded], |r| r.get(0))?
                .collect()
        })?
    };
    let mut ids: Vec<i64> = live_ids.into_iter().chain(ended_ids).collect();
    ids.sort_unstable_by(|a, b| b.cmp(a));
    ids.truncate(limit as usize);
    ids.into_iter().filter_map(|id| get_record(conn, id, false).transpose()).collect()
}
