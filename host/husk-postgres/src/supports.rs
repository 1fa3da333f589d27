//! [`PostgresStore`]'s capabilities beyond the queue, its listing and its
//! incidents: pauses, pruning and plugin versions.

use std::time::SystemTime;

use husk::store::sql::{millis, prune_candidates, prune_cutoffs, stored_version, time};
use husk::store::{
    Pauses, Pruned, Pruning, Retention, StoreError, StoredVersion, TopicVersion, VersionToKeep, Versions,
};

use crate::PostgresStore;
use crate::pool::PgError;
use husk::versions::Rollback;

impl Pauses for PostgresStore {
    fn set_paused(&self, topic: &str, paused: bool) -> Result<bool, StoreError> {
        self.run("pause", |tx| {
            if paused {
                let sql = "INSERT INTO husk_paused (topic) VALUES ($1) ON CONFLICT DO NOTHING";
                return Ok(tx.execute(sql, &[&topic])? == 1);
            }
            let resumed = tx.execute("DELETE FROM husk_paused WHERE topic = $1", &[&topic])? == 1;
            if resumed {
                // Every process's fetchers look again.
                tx.wake_fetchers();
            }
            Ok(resumed)
        })
    }

    fn paused(&self) -> Result<Vec<String>, StoreError> {
        self.run("paused topics", |tx| {
            Ok(tx.query("SELECT topic FROM husk_paused ORDER BY topic", &[])?.iter().map(|r| r.get(0)).collect())
        })
    }
}

impl Pruning for PostgresStore {
    fn prune(&self, retention: &Retention, now: SystemTime, batch: usize) -> Result<Pruned, StoreError> {
        let [completed, failed, others, latest] = prune_cutoffs(retention, now);
        self.run("prune", |tx| {
            let pruned = tx.query(
                concat!(
                    "DELETE FROM husk_outcomes WHERE seq IN (",
                    prune_candidates!("husk_outcomes", "$"),
                    " FOR UPDATE SKIP LOCKED) RETURNING seq, job_id"
                ),
                &[&completed, &failed, &others, &latest, &(batch as i64)],
            )?;
            let jobs: Vec<i64> = pruned.iter().map(|r| r.get(1)).collect();
            let keys = tx.execute(
                "DELETE FROM husk_keys k WHERE k.job_id = ANY($1)
                   AND NOT EXISTS (SELECT 1 FROM husk_jobs WHERE id = k.job_id)
                   AND NOT EXISTS (SELECT 1 FROM husk_outcomes WHERE job_id = k.job_id)",
                &[&jobs],
            )?;
            if let Some(last) = pruned.iter().map(|r| r.get::<_, i64>(0)).max() {
                tx.execute("UPDATE husk_meta SET value = greatest(value, $1) WHERE key = 'pruned_through'", &[&last])?;
            }
            Ok(Pruned { outcomes: pruned.len() as u64, keys })
        })
    }

    fn pruned_through(&self) -> Result<u64, StoreError> {
        self.run("pruned outcomes", |tx| {
            let row = tx.query_one("SELECT value FROM husk_meta WHERE key = 'pruned_through'", &[])?;
            Ok(row.get::<_, i64>(0) as u64)
        })
    }
}

impl Versions for PostgresStore {
    fn put_version(&self, put: &VersionToKeep<'_>) -> Result<(), StoreError> {
        let VersionToKeep { topic, version, component, config, keep } = *put;
        self.run("deploy a plugin version", |tx| {
            let seq: i64 = tx
                .query_one(
                    "INSERT INTO husk_topic_versions (topic, current, config, seq)
                     VALUES ($1, $2, CASE WHEN $3 THEN $2 END, 1)
                     ON CONFLICT (topic) DO UPDATE SET current = excluded.current,
                         config = coalesce(excluded.config, husk_topic_versions.config),
                         seq = husk_topic_versions.seq + 1, rolled_back_by = NULL, rolled_back_at = NULL
                     RETURNING seq",
                    &[&topic, &version.digest, &config],
                )?
                .get(0);
            let stamp = &version.stamp;
            tx.execute(
                "INSERT INTO husk_plugin_versions (topic, digest, component, origin, deployed_by, deployed_at, seq)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (topic, digest) DO UPDATE SET origin = excluded.origin,
                     deployed_by = excluded.deployed_by, deployed_at = excluded.deployed_at, seq = excluded.seq",
                &[&topic, &version.digest, &component, &stamp.origin.as_str(), &stamp.by, &millis(stamp.at), &seq],
            )?;
            tx.execute(
                "DELETE FROM husk_plugin_versions WHERE topic = $1 AND seq < (
                     SELECT min(seq) FROM (SELECT seq FROM husk_plugin_versions WHERE topic = $1
                                           ORDER BY seq DESC LIMIT $2) k)",
                &[&topic, &(keep.max(1) as i64)],
            )?;
            Ok(())
        })
    }

    fn set_current_version(&self, topic: &str, version: &StoredVersion) -> Result<bool, StoreError> {
        self.run("roll back a plugin version", |tx| {
            let stamp = &version.stamp;
            let updated = tx.execute(
                "UPDATE husk_topic_versions SET current = $2, rolled_back_by = $3, rolled_back_at = $4
                 WHERE topic = $1 AND EXISTS (SELECT 1 FROM husk_plugin_versions WHERE topic = $1 AND digest = $2)",
                &[&topic, &version.digest, &stamp.by, &millis(stamp.at)],
            )?;
            Ok(updated == 1)
        })
    }

    fn current_versions(&self) -> Result<Vec<TopicVersion>, StoreError> {
        self.run("current plugin versions", |tx| {
            let rows = tx.query(
                "SELECT topic, current, config, rolled_back_by, rolled_back_at FROM husk_topic_versions ORDER BY topic",
                &[],
            )?;
            let pointer = |r: &postgres::Row| {
                let rolled_back = r.get::<_, Option<i64>>(4).map(|at| Rollback { by: r.get(3), at: time(at) });
                TopicVersion { topic: r.get(0), current: r.get(1), config: r.get(2), rolled_back }
            };
            Ok(rows.iter().map(pointer).collect())
        })
    }

    fn kept_versions(&self, topic: &str) -> Result<Vec<StoredVersion>, StoreError> {
        self.run("plugin versions", |tx| {
            let rows = tx.query(
                "SELECT digest, origin, deployed_by, deployed_at FROM husk_plugin_versions WHERE topic = $1
                 ORDER BY seq DESC",
                &[&topic],
            )?;
            rows.iter()
                .map(|r| {
                    stored_version(r.get(0), r.get::<_, &str>(1), r.get(2), r.get(3))
                        .map_err(|e| PgError::Json(serde::de::Error::custom(e)))
                })
                .collect()
        })
    }

    fn version_component(&self, topic: &str, digest: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.run("plugin component", |tx| {
            let row = tx.query_opt(
                "SELECT component FROM husk_plugin_versions WHERE topic = $1 AND digest = $2",
                &[&topic, &digest],
            )?;
            Ok(row.map(|r| r.get(0)))
        })
    }
}
