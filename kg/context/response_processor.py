"""ResponseProcessor: infers working context from an LLM's response text (seed 004 §5.3).

Four keys are recognised with the seed's regular expressions (case-insensitive): active_file,
framework, current_task and primary_language. Matches go into the session's working context
with source `inferred` and confidence 0.6 — unless the key already holds a value from a more
trustworthy source (explicit or tool, or any higher confidence): a guess never overwrites a
fact. `$` matches at line ends (re.MULTILINE) so a task on one line of a longer reply is found.

>>> extract_context("I'm working on `lib/app.ex` using Phoenix 1.7.")
{'active_file': 'lib/app.ex', 'framework': 'Phoenix 1.7'}
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from kg.errors import KgError
from kg.shortterm import SessionManager
from kg.terms import ContextKey, ContextSource

__all__ = [
    "CONTEXT_PATTERNS",
    "INFERRED_CONFIDENCE",
    "MAX_RESPONSE_CHARS",
    "ResponseProcessor",
    "extract_context",
]

log = logging.getLogger(__name__)

INFERRED_CONFIDENCE = 0.6
# Responses are scanned up to this length: the patterns are linear, but megabytes of text in
# the request thread would still be wasted work for four short values.
MAX_RESPONSE_CHARS = 100_000
MAX_VALUE_CHARS = 200

_FLAGS = re.IGNORECASE | re.MULTILINE
CONTEXT_PATTERNS: Mapping[ContextKey, tuple[re.Pattern[str], ...]] = {
    ContextKey.ACTIVE_FILE: (
        re.compile(
            r"(?:working on|editing|reading|looking at)\s+[`\"]?([^`\"\s]+\.\w+)[`\"]?", _FLAGS
        ),
        re.compile(r"file[:\s]+[`\"]?([^`\"\s]+\.\w+)[`\"]?", _FLAGS),
    ),
    ContextKey.FRAMEWORK: (
        re.compile(
            r"(?:using|project uses|built with|based on)\s+([A-Z][a-zA-Z]+(?:\s+\d+(?:\.\d+)*)?)",
            _FLAGS,
        ),
    ),
    ContextKey.CURRENT_TASK: (
        re.compile(
            r"(?:implementing|fixing|creating|adding|updating|refactoring)\s+(.+?)(?:\.|$)", _FLAGS
        ),
    ),
    ContextKey.PRIMARY_LANGUAGE: (
        re.compile(
            r"(?:this is an?|written in)\s+(\w+)\s+(?:project|codebase|application)", _FLAGS
        ),
    ),
}


def extract_context(response: object) -> dict[str, str]:
    """Key → first match of its patterns in `response`; {} for empty or non-text input."""
    if not isinstance(response, str) or not response:
        return {}
    text = response[:MAX_RESPONSE_CHARS]
    found: dict[str, str] = {}
    for key, patterns in CONTEXT_PATTERNS.items():
        for pattern in patterns:
            match = pattern.search(text)
            if match is not None:
                value = match.group(1).strip()[:MAX_VALUE_CHARS]
                if value:
                    found[key.value] = value
                    break
    return found


class ResponseProcessor:
    """Writes what extract_context finds into a session's working context."""

    def __init__(self, sessions: SessionManager, *, max_workers: int = 2) -> None:
        self.sessions = sessions
        self._executor: ThreadPoolExecutor | None = None
        self._max_workers = max_workers

    def process_response(self, response: object, session_id: str) -> dict[str, str]:
        """Extract context from `response`, store it as inferred (0.6); return what was found."""
        extractions = extract_context(response)
        if extractions:
            self._update(extractions, session_id)
        return extractions

    def process_response_async(self, response: object, session_id: str) -> Future[dict[str, str]]:
        """Run process_response in a background thread; failures are logged, never raised."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._max_workers, thread_name_prefix="kg-resp")
        return self._executor.submit(self._safe, response, session_id)

    def close(self) -> None:
        """Wait for background work and stop the worker threads."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def _safe(self, response: object, session_id: str) -> dict[str, str]:
        try:
            found = self.process_response(response, session_id)
        except KgError as e:
            # The session may have closed while the reply was processed; that loses nothing.
            log.info("response processing skipped for %s: %s", session_id, e.message)
            return {}
        log.debug("inferred %s for session %s", found, session_id)
        return found

    def _update(self, extractions: Mapping[str, Any], session_id: str) -> None:
        with self.sessions.use(session_id) as session:
            context = session.working_context
            for key, value in extractions.items():
                current = context.item(key)
                if current is not None and (
                    current.source is not ContextSource.INFERRED
                    or current.confidence > INFERRED_CONFIDENCE
                ):
                    continue
                context.put(
                    key, value, source=ContextSource.INFERRED, confidence=INFERRED_CONFIDENCE
                )
