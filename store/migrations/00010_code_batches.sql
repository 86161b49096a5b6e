-- +goose Up

-- Code generation as named batches that run as jobs (internal/admin/batches.go). A batch row
-- is both the job (its status and progress, written by the instance that runs it, so any
-- instance can show it) and the name every code it generated answers to, so the batch can be
-- revoked as a whole.
--
-- status moves queued -> running -> done | failed | cancelled. heartbeat_at is refreshed
-- by the running instance every few seconds: a queued or running batch whose heartbeat is
-- stale lost its instance (a crash or a restart) and is marked failed by whoever reads it
-- next; it is not resumed, and the codes it made stay tied to it. cancel_requested is how an
-- operator on any instance asks the running one to stop.
CREATE TABLE code_batches (
    id               uuid        PRIMARY KEY,
    project_id       uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name             text        NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    requested        integer     NOT NULL CHECK (requested > 0),
    spec             jsonb       NOT NULL,
    status           text        NOT NULL DEFAULT 'queued'
                                 CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
    done             integer     NOT NULL DEFAULT 0,
    error            text        NOT NULL DEFAULT '',
    created_by       text        NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    heartbeat_at     timestamptz NOT NULL DEFAULT now(),
    cancel_requested boolean     NOT NULL DEFAULT false,
    revoked_at       timestamptz,
    revoked_by       text        NOT NULL DEFAULT ''
);
CREATE INDEX code_batches_project_idx ON code_batches (project_id, created_at DESC);

-- code_batch_ranges ties codes to their batch by ranges of the project's dense code sequence
-- (codes.seq, 00002): each insert of a batch's codes takes consecutive numbers under the
-- project's lock, so one row a round of 10,000 or 50,000 codes is enough, and generation
-- writes no extra column or index entry per code. A batch's codes are found through
-- codes_project_seq_key.
CREATE TABLE code_batch_ranges (
    batch_id   uuid   NOT NULL REFERENCES code_batches (id) ON DELETE CASCADE,
    project_id uuid   NOT NULL,
    seq_from   bigint NOT NULL,
    seq_to     bigint NOT NULL CHECK (seq_to >= seq_from),
    PRIMARY KEY (batch_id, seq_from)
);

-- +goose Down
DROP TABLE IF EXISTS code_batch_ranges;
DROP TABLE IF EXISTS code_batches;
