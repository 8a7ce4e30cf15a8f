"""The one settings object; every field can be set by a `KG_*` environment variable."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["MEMORY_STORE", "Settings"]

MEMORY_STORE = ":memory:"


class Settings(BaseSettings):
    """Configuration of the store and the service (env prefix `KG_`, e.g. `KG_PORT=9000`)."""

    model_config = SettingsConfigDict(env_prefix="KG_", frozen=True, extra="forbid")

    store: str = Field(
        default="data/store",
        description="Directory of the embedded on-disk store, or ':memory:' for a throw-away one.",
    )
    host: str = Field(default="127.0.0.1", description="Address the service binds to.")
    port: int = Field(default=7879, ge=0, le=65535, description="TCP port of the service.")
    threads: int = Field(default=8, ge=1, le=256, description="WSGI worker threads.")
    base_url: str = Field(
        default="",
        description="Public base URL of the service, if behind a proxy (used in links).",
    )

    @property
    def in_memory(self) -> bool:
        """True when the store is a throw-away in-memory one."""
        return self.store == MEMORY_STORE

    @property
    def store_path(self) -> Path | None:
        """The store directory, or None for an in-memory store."""
        return None if self.in_memory else Path(self.store)
