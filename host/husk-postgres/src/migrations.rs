//! The schema: its migrations, applied at open under an advisory lock.

use postgres::Client;

use husk::store::sql::SCHEMA_VERSION;

/// Migration `i` takes a database from schema `i` to `i + 1` (see
/// [`SCHEMA_VERSION`]); opening applies those past `husk_meta`'s
/// `schema_version`, in one transaction.
pub(crate) const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    r#"
CREATE TABLE husk_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO husk_meta (key, value) VALUES ('schema_version', 0), ('outcome_seq', 0);
CREATE SEQUENCE husk_lock_tokens;
CREATE TABLE husk_jobs (
    id               BIGSERIAL PRIMARY KEY,
    generation       INTEGER  NOT NULL DEFAULT 0,
    topic            TEXT     NOT NULL,
    input            BYTEA    NOT NULL,
    policy           TEXT     NOT NULL,
    attempt          BIGINT   NOT NULL,
    state            BIGINT   NOT NULL,
    not_before       BIGINT,
    lock_worker      TEXT,
    lock_token       BIGINT,
    lock_expires_at  BIGINT,
    last_fault       TEXT,
    cancel_requested BOOLEAN  NOT NULL DEFAULT FALSE,
    enqueued_at      BIGINT   NOT NULL
);
CREATE INDEX husk_jobs_ready ON husk_jobs (topic, id) WHERE state = 0;
CREATE INDEX husk_jobs_gates ON husk_jobs (not_before) WHERE state = 1;
CREATE INDEX husk_jobs_locks ON husk_jobs (lock_expires_at) WHERE state = 2;
CREATE TABLE husk_outcomes (
    seq           BIGINT  PRIMARY KEY,
    job_id        BIGINT  NOT NULL,
    generation    INTEGER NOT NULL,
    topic         TEXT    NOT NULL,
    attempts      BIGINT  NOT NULL,
    enqueued_at   BIGINT  NOT NULL,
    finished_at   BIGINT  NOT NULL,
    outcome       TEXT    NOT NULL,
    policy        TEXT    NOT NULL,
    last_fault    TEXT,
    open_incident BOOLEAN NOT NULL,
    input         BYTEA,
    UNIQUE (job_id, generation)
);
CREATE INDEX husk_outcomes_incidents ON husk_outcomes (job_id) WHERE open_incident;
"#,
    // 2: attempt histories (JSON arrays of `AttemptRecord`s) and
    // idempotency keys (kept after their job ends, so not on its row).
    // Histories are TEXT appended as text, not JSONB: JSONB refuses `\u0000`,
    // which a guest's fault body may hold, and would re-parse the whole
    // history on every append.
    r#"
ALTER TABLE husk_jobs ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
ALTER TABLE husk_outcomes ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
CREATE TABLE husk_keys (key TEXT PRIMARY KEY, job_id BIGINT NOT NULL);
CREATE FUNCTION husk_append(history TEXT, more TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN more = '[]' THEN history
                WHEN history = '[]' THEN more
                ELSE left(history, -1) || ',' || substr(more, 2) END
$$;
"#,
    // 3: paused topics; plugin versions: each topic's current one (and the
    // config file's, when last recorded) and the kept components, `seq`
    // ordering a topic's versions by when they were last made current (the
    // topic's row is locked by every change, so they are serialized);
    // retention: outcomes pruned by age, keys by their job.
    r#"
CREATE INDEX husk_outcomes_finished ON husk_outcomes (finished_at);
CREATE INDEX husk_keys_job ON husk_keys (job_id);
INSERT INTO husk_meta (key, value) VALUES ('pruned_through', 0);
CREATE TABLE husk_paused (topic TEXT PRIMARY KEY);
CREATE TABLE husk_permits (
    tenant     TEXT   NOT NULL,
    holder     TEXT   NOT NULL,
    held       BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (tenant, holder)
);
-- Leases `want` more of a tenant's `limit` permits to a holder that holds
-- `held`: one statement, serialized per tenant by a transaction-scoped
-- advisory lock; soft state, so committed without waiting for the WAL flush.
CREATE FUNCTION husk_acquire(p_tenant TEXT, p_holder TEXT, p_held BIGINT, p_want BIGINT, p_limit BIGINT,
                             p_until BIGINT, p_now BIGINT) RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    others BIGINT;
    leased BIGINT;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pg_advisory_xact_lock(1752331116, hashtext(p_tenant));
    SELECT coalesce(sum(held), 0) INTO others FROM husk_permits
     WHERE tenant = p_tenant AND holder <> p_holder AND expires_at > p_now;
    leased := greatest(0, least(p_want, p_limit - others - p_held));
    INSERT INTO husk_permits (tenant, holder, held, expires_at) VALUES (p_tenant, p_holder, p_held + leased, p_until)
        ON CONFLICT (tenant, holder) DO UPDATE SET held = excluded.held, expires_at = excluded.expires_at;
    RETURN leased;
END
$$;
CREATE TABLE husk_topic_versions (
    topic   TEXT   PRIMARY KEY,
    current TEXT   NOT NULL,
    config  TEXT,
    seq     BIGINT NOT NULL
);
CREATE TABLE husk_plugin_versions (
    topic       TEXT   NOT NULL,
    digest      TEXT   NOT NULL,
    component   BYTEA  NOT NULL,
    origin      TEXT   NOT NULL,
    deployed_by TEXT,
    deployed_at BIGINT NOT NULL,
    seq         BIGINT NOT NULL,
    PRIMARY KEY (topic, digest)
);
"#,
    // 4: outcome `seq`s from a sequence instead of a counter row locked
    // until commit, so transactions that end jobs share WAL flushes; the
    // outcome stream reads only below every in-flight writer's mark (see
    // `crate::sequence`).
    r#"
CREATE SEQUENCE husk_outcome_seq;
SELECT setval('husk_outcome_seq', value) FROM husk_meta WHERE key = 'outcome_seq' AND value > 0;
DELETE FROM husk_meta WHERE key = 'outcome_seq';
-- This deployment's tag in the advisory-lock keys of outcome writers (its
-- schema's: deployments sharing a database do not hold each other back).
CREATE FUNCTION husk_seq_tag() RETURNS BIGINT LANGUAGE sql STABLE AS $$
    SELECT ((hashtext(current_schema()) & 32767) | 16384)::bigint
$$;
-- The highest seq drawn so far.
CREATE FUNCTION husk_seq_drawn() RETURNS BIGINT LANGUAGE sql VOLATILE AS $$
    SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM husk_outcome_seq
$$;
-- `n` seqs for outcomes this transaction writes: first a shared advisory
-- lock keyed by the highest seq drawn so far (so every seq this transaction
-- draws is above its mark), held until the transaction ends.
CREATE FUNCTION husk_next_seqs(n BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF n > 0 THEN
        PERFORM pg_advisory_xact_lock_shared((husk_seq_tag() << 48) | husk_seq_drawn());
        RETURN QUERY SELECT nextval('husk_outcome_seq') FROM generate_series(1, n);
    END IF;
END
$$;
-- The highest seq below which every outcome is committed (or will never
-- be): the highest drawn, read first, lowered to the mark of any writer
-- still in flight.
CREATE FUNCTION husk_seq_committed() RETURNS BIGINT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    drawn BIGINT := husk_seq_drawn();
    marked BIGINT;
BEGIN
    SELECT min(((classid::bigint << 32) | objid::bigint) & 281474976710655) INTO marked FROM pg_locks
     WHERE locktype = 'advisory' AND objsubid = 1 AND (classid::bigint >> 16) = husk_seq_tag()
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database());
    RETURN least(drawn, coalesce(marked, drawn));
END
$$;
"#,
    // 5: statements planned once per connection. PostgreSQL plans a
    // prepared statement anew on every call while it judges the generic
    // plan dearer than a custom one; an enqueue's arrays of one job made
    // it judge so on every call, planning cost more than running it. The
    // enqueue now runs in a function whose plan is always the generic one;
    // and each report's mark reads the sequence itself, not through
    // `husk_seq_drawn`, a SQL-language function (whose body PostgreSQL
    // parses and plans on every call), and draws its seqs in a loop rather
    // than a query planned for each `n`. The readers' bound, a call per
    // read of the outcome stream, keeps `husk_seq_drawn`.
    r#"
CREATE FUNCTION husk_enqueue(p_topics TEXT[], p_inputs BYTEA[], p_policies TEXT[], p_states BIGINT[],
                             p_gates BIGINT[], p_keys TEXT[], p_now BIGINT)
    RETURNS TABLE (slot BIGINT, id BIGINT, created BOOLEAN, holder BIGINT)
    LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH n AS MATERIALIZED (
         SELECT n.*, nextval('husk_jobs_id_seq') AS id
         FROM unnest(p_topics, p_inputs, p_policies, p_states, p_gates, p_keys) WITH ORDINALITY
              AS n(topic, input, policy, state, not_before, key, slot)),
     keyed AS (
         INSERT INTO husk_keys (key, job_id) SELECT key, id FROM n WHERE key IS NOT NULL ORDER BY key
         ON CONFLICT (key) DO NOTHING RETURNING key),
     marked AS MATERIALIZED (
         SELECT n.*, (n.key IS NULL OR n.key IN (SELECT key FROM keyed)) AS created FROM n),
     written AS (
         INSERT INTO husk_jobs (id, topic, input, policy, attempt, state, not_before, enqueued_at)
         SELECT id, topic, input, policy, 1, state, not_before, p_now FROM marked WHERE created)
    SELECT marked.slot, marked.id, marked.created,
           CASE WHEN marked.created THEN NULL
                ELSE (SELECT k.job_id FROM husk_keys k WHERE k.key = marked.key) END
    FROM marked;
END
$$;
CREATE OR REPLACE FUNCTION husk_next_seqs(n BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    drawn BIGINT;
BEGIN
    IF n > 0 THEN
        SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END INTO drawn FROM husk_outcome_seq;
        PERFORM pg_advisory_xact_lock_shared((husk_seq_tag() << 48) | drawn);
        FOR i IN 1..n LOOP
            RETURN NEXT nextval('husk_outcome_seq');
        END LOOP;
    END IF;
END
$$;
"#,
    // 6: a rollback moves a topic's current pointer only, and says who
    // made it and when; the order of deploys stays.
    r#"
ALTER TABLE husk_topic_versions ADD COLUMN rolled_back_by TEXT, ADD COLUMN rolled_back_at BIGINT;
"#,
    // 7: a job's input kept with its outcome unless its topic drops it;
    // `husk_enqueue` takes whether each job keeps it (the six-array form
    // stays for processes of the previous schema, and keeps every input).
    r#"
ALTER TABLE husk_jobs ADD COLUMN keep_input BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE husk_outcomes ADD COLUMN keep_input BOOLEAN NOT NULL DEFAULT TRUE;
CREATE FUNCTION husk_enqueue(p_topics TEXT[], p_inputs BYTEA[], p_policies TEXT[], p_states BIGINT[],
                             p_gates BIGINT[], p_keys TEXT[], p_keep BOOLEAN[], p_now BIGINT)
    RETURNS TABLE (slot BIGINT, id BIGINT, created BOOLEAN, holder BIGINT)
    LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH n AS MATERIALIZED (
         SELECT n.*, nextval('husk_jobs_id_seq') AS id
         FROM unnest(p_topics, p_inputs, p_policies, p_states, p_gates, p_keys, p_keep) WITH ORDINALITY
              AS n(topic, input, policy, state, not_before, key, keep_input, slot)),
     keyed AS (
         INSERT INTO husk_keys (key, job_id) SELECT key, id FROM n WHERE key IS NOT NULL ORDER BY key
         ON CONFLICT (key) DO NOTHING RETURNING key),
     marked AS MATERIALIZED (
         SELECT n.*, (n.key IS NULL OR n.key IN (SELECT key FROM keyed)) AS created FROM n),
     written AS (
         INSERT INTO husk_jobs (id, topic, input, policy, attempt, state, not_before, enqueued_at, keep_input)
         SELECT id, topic, input, policy, 1, state, not_before, p_now, keep_input FROM marked WHERE created)
    SELECT marked.slot, marked.id, marked.created,
           CASE WHEN marked.created THEN NULL
                ELSE (SELECT k.job_id FROM husk_keys k WHERE k.key = marked.key) END
    FROM marked;
END
$$;
"#,
    // 8: priorities within a topic: the ready index yields a topic's
    // queued jobs the highest priority first, then the oldest;
    // `husk_enqueue` takes each job's (the older forms stay, for
    // processes of the previous schemas, and enqueue at priority 0).
    r#"
ALTER TABLE husk_jobs ADD COLUMN priority SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE husk_outcomes ADD COLUMN priority SMALLINT NOT NULL DEFAULT 0;
DROP INDEX husk_jobs_ready;
CREATE INDEX husk_jobs_ready ON husk_jobs (topic, priority DESC, id) WHERE state = 0;
CREATE FUNCTION husk_enqueue(p_topics TEXT[], p_inputs BYTEA[], p_policies TEXT[], p_states BIGINT[],
                             p_gates BIGINT[], p_keys TEXT[], p_keep BOOLEAN[], p_priorities SMALLINT[],
                             p_now BIGINT)
    RETURNS TABLE (slot BIGINT, id BIGINT, created BOOLEAN, holder BIGINT)
    LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH n AS MATERIALIZED (
         SELECT n.*, nextval('husk_jobs_id_seq') AS id
         FROM unnest(p_topics, p_inputs, p_policies, p_states, p_gates, p_keys, p_keep, p_priorities) WITH ORDINALITY
              AS n(topic, input, policy, state, not_before, key, keep_input, priority, slot)),
     keyed AS (
         INSERT INTO husk_keys (key, job_id) SELECT key, id FROM n WHERE key IS NOT NULL ORDER BY key
         ON CONFLICT (key) DO NOTHING RETURNING key),
     marked AS MATERIALIZED (
         SELECT n.*, (n.key IS NULL OR n.key IN (SELECT key FROM keyed)) AS created FROM n),
     written AS (
         INSERT INTO husk_jobs (id, topic, input, policy, attempt, state, not_before, enqueued_at, keep_input,
                                priority)
         SELECT id, topic, input, policy, 1, state, not_before, p_now, keep_input, priority FROM marked WHERE created)
    SELECT marked.slot, marked.id, marked.created,
           CASE WHEN marked.created THEN NULL
                ELSE (SELECT k.job_id FROM husk_keys k WHERE k.key = marked.key) END
    FROM marked;
END
$$;
"#,
];

/// Key of the advisory lock that serializes migrations of concurrent starts.
pub(crate) const MIGRATION_LOCK: i64 = 0x6875_736b_0001;

#[derive(Debug)]
pub(crate) enum MigrateError {
    Newer(i64),
    Db(postgres::Error),
}

impl From<postgres::Error> for MigrateError {
    fn from(e: postgres::Error) -> Self {
        MigrateError::Db(e)
    }
}

pub(crate) fn migrate(client: &mut Client) -> Result<(), MigrateError> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    let exists: bool = tx.query_one("SELECT to_regclass('husk_meta') IS NOT NULL", &[])?.get(0);
    let version: i64 = if exists {
        tx.query_opt("SELECT value FROM husk_meta WHERE key = 'schema_version'", &[])?.map_or(0, |r| r.get(0))
    } else {
        0
    };
    if version > SCHEMA_VERSION {
        return Err(MigrateError::Newer(version));
    }
    for migration in MIGRATIONS.iter().skip(version as usize) {
        tx.batch_execute(migration)?;
    }
    tx.execute("UPDATE husk_meta SET value = $1 WHERE key = 'schema_version'", &[&SCHEMA_VERSION])?;
    tx.commit()?;
    Ok(())
}
