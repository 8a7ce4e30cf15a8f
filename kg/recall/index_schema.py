"""The SQLite schema of the recall index and the SQL of its fingerprint."""

from __future__ import annotations

__all__ = ["SCHEMA", "SCHEMA_VERSION", "fingerprint_sql"]

# Bump when the tables or the indexed text change: an older file is then rebuilt from the store.
SCHEMA_VERSION = "4"

# `memory` holds everything filtering and ranking need, so recall never reads the store per
# candidate; `record` is the whole Memory as JSON for the hits; `body` is the text the keyword
# index (kg/recall/text_index.py, tantivy) holds for the memory, with its neighbours' as context.
# `matrix_version` is the version each project's embedding file must end at
# (kg/recall/matrix_file.py); it is new in schema 4 files without a version bump: missing, every
# file is stale and is rebuilt from `memory`. `memory_fingerprint` covers the fingerprint's
# columns, so the start-up check reads ~30 MB instead of every row of the table (1.2 GB of
# mapped pages at 1M memories, which then counted in the server's RSS); it too is new without a
# bump: an older file gets it at its next open (~2 s at 1M).
SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memory (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    project TEXT NOT NULL,
    session TEXT NOT NULL,
    type TEXT NOT NULL,
    confidence REAL NOT NULL,
    timestamp REAL NOT NULL,
    recorded_at REAL NOT NULL,
    retired_at REAL,
    valid_from REAL,
    valid_until REAL,
    access_count INTEGER NOT NULL,
    body TEXT NOT NULL,
    record TEXT NOT NULL,
    embedding BLOB
);
CREATE INDEX IF NOT EXISTS memory_order
    ON memory (project, session, timestamp, recorded_at, seq);
CREATE INDEX IF NOT EXISTS memory_by_type_time ON memory (project, type, timestamp, recorded_at);
CREATE INDEX IF NOT EXISTS memory_by_type_confidence
    ON memory (project, type, confidence, timestamp);
CREATE INDEX IF NOT EXISTS memory_by_recorded ON memory (project, recorded_at);
CREATE INDEX IF NOT EXISTS memory_fingerprint ON memory (recorded_at, retired_at, access_count);
CREATE TABLE IF NOT EXISTS matrix_version (project TEXT PRIMARY KEY, version INTEGER NOT NULL);
"""

_FINGERPRINT = """
SELECT COUNT(*), MAX(recorded_at), COUNT(retired_at), MAX(retired_at), SUM(access_count)
FROM memory
"""


def fingerprint_sql() -> str:
    """SQL giving (count, latest recorded, retired count, latest retired, access total)."""
    return _FINGERPRINT
