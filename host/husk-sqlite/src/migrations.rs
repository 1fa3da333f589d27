//! The schema: migration `i` takes a database from schema `i` to `i + 1`.

use husk::store::sql::SCHEMA_VERSION;

/// Migration `i` takes a database from schema `i` to `i + 1`; opening
/// applies those past the file's `user_version`, in one transaction.
pub(crate) const MIGRATIONS: [&str; SCHEMA_VERSION as usize] = [
    r#"
CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    generation       INTEGER NOT NULL DEFAULT 0,
    topic            TEXT    NOT NULL,
    input            BLOB    NOT NULL,
    policy           TEXT    NOT NULL,
    attempt          INTEGER NOT NULL,
    state            INTEGER NOT NULL,
    not_before       INTEGER,
    lock_worker      TEXT,
    lock_token       INTEGER,
    lock_expires_at  INTEGER,
    last_fault       TEXT,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    enqueued_at      INTEGER NOT NULL
);
CREATE INDEX jobs_ready ON jobs (topic, state, id);
CREATE INDEX jobs_gates ON jobs (not_before) WHERE state = 1;
CREATE INDEX jobs_locks ON jobs (lock_expires_at) WHERE state = 2;
CREATE TABLE outcomes (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id       INTEGER NOT NULL,
    generation   INTEGER NOT NULL,
    topic        TEXT    NOT NULL,
    attempts     INTEGER NOT NULL,
    enqueued_at  INTEGER NOT NULL,
    finished_at  INTEGER NOT NULL,
    outcome      TEXT    NOT NULL,
    policy       TEXT    NOT NULL,
    last_fault   TEXT,
    open_incident INTEGER NOT NULL,
    input        BLOB,
    UNIQUE (job_id, generation)
);
CREATE INDEX outcomes_incidents ON outcomes (job_id) WHERE open_incident = 1;
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT INTO meta (key, value) VALUES ('next_token', 0);
"#,
    // 2: attempt histories (JSON arrays of `AttemptRecord`s) and
    // idempotency keys (kept after their job ends, so not on its row).
    r#"
ALTER TABLE jobs ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
ALTER TABLE outcomes ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
CREATE TABLE keys (key TEXT PRIMARY KEY, job_id INTEGER NOT NULL) WITHOUT ROWID;
"#,
    // 3: paused topics; plugin versions: each topic's current one (and the
    // config file's, when last recorded) and the kept components, `seq`
    // ordering a topic's versions by when they were last made current;
    // retention: outcomes pruned by age, keys by their job.
    r#"
CREATE INDEX outcomes_finished ON outcomes (finished_at);
CREATE INDEX keys_job ON keys (job_id);
INSERT INTO meta (key, value) VALUES ('pruned_through', 0);
CREATE TABLE paused (topic TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE topic_versions (
    topic   TEXT    PRIMARY KEY,
    current TEXT    NOT NULL,
    config  TEXT,
    seq     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE plugin_versions (
    topic       TEXT    NOT NULL,
    digest      TEXT    NOT NULL,
    component   BLOB    NOT NULL,
    origin      TEXT    NOT NULL,
    deployed_by TEXT,
    deployed_at INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    PRIMARY KEY (topic, digest)
);
"#,
    // 4: nothing here (PostgreSQL's outcome sequence; one writer needs none).
    r#"
UPDATE meta SET value = value WHERE 0;
"#,
    // 5: nothing here (PostgreSQL's statements planned once).
    r#"
UPDATE meta SET value = value WHERE 0;
"#,
    // 6: a rollback moves a topic's current pointer only, and says who
    // made it and when; the order of deploys stays.
    r#"
ALTER TABLE topic_versions ADD COLUMN rolled_back_by TEXT;
ALTER TABLE topic_versions ADD COLUMN rolled_back_at INTEGER;
"#,
    // 7: a job's input kept with its outcome unless its topic drops it.
    r#"
ALTER TABLE jobs ADD COLUMN keep_input INTEGER NOT NULL DEFAULT 1;
ALTER TABLE outcomes ADD COLUMN keep_input INTEGER NOT NULL DEFAULT 1;
"#,
    // 8: priorities within a topic: the ready index yields a topic's
    // queued jobs the highest priority first, then the oldest.
    r#"
ALTER TABLE jobs ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outcomes ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
DROP INDEX jobs_ready;
CREATE INDEX jobs_ready ON jobs (topic, state, priority DESC, id);
"#,
];
