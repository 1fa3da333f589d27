-- The SQLite store's schema 1 (husk before attempt histories and idempotency keys),
-- as its migration 1 wrote it. Frozen: the upgrade test starts from it.
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
