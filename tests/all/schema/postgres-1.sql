-- The PostgreSQL store's schema 1 (husk before attempt histories and idempotency
-- keys), as its migration 1 wrote it. Frozen: the upgrade test starts from it.
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
