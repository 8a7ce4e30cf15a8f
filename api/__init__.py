"""The HTTP face of jido-kg: `create_app(settings)` and the `jido-kg` command."""

from __future__ import annotations

from api.app import create_app

__all__ = ["create_app"]
