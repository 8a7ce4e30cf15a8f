"""Keys a memory is indexed under beside its words: calendar terms and question-type cues.

A memory's keys are the calendar terms of its own moment and of the moments its text names
(kg/recall/time_expression.py), plus cues: `ctime` if the text names a time at all, `cnum` if it
holds a number. A query's keys are the calendar terms it names and the cue its question type
asks for ("when …" → `ctime`, "how many/often/long/much …" → `cnum`), each with a weight: the
keyword index adds the terms to the words' BM25 as boosted term queries on a field of their
own, and lifts the memories it found that have the cue (kg/recall/text_index.py).

>>> from datetime import datetime
>>> memory_keys("Ran a charity race last Saturday", datetime(2023, 5, 25))[:3]
['d20230525', 'w2023w21', 'm202305']
>>> query_keys("When did Mel run the race?", datetime(2026, 1, 1), time=2.0, cue=0.3)
[('ctime', 0.3)]
"""

from __future__ import annotations

import re
from datetime import date, datetime

from kg.recall.time_expression import memory_terms, query_terms, spans

__all__ = ["COVERAGE", "CUES", "CUE_NUMBER", "CUE_TIME", "memory_keys", "query_keys"]

CUE_TIME = "ctime"
CUE_NUMBER = "cnum"
CUES = {CUE_TIME: 1, CUE_NUMBER: 2}  # the bit of each cue in the keyword index's `cues` field
# Not a term: the weight of the share of the query's words a found memory's own text holds, which
# reorders the found memories (kg/recall/text_index.py): a memory that says the question's words
# itself goes before one whose neighbours say them.
COVERAGE = "cover"
_NUMBER_WORDS = frozenset([
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "twenty", "hundred", "thousand", "twice", "once", "couple", "few", "several",
    "dozen"])
_LETTERS = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"\d")
_WHEN = re.compile(r"\s*(?:when|what (?:date|year|month|day|time)|how long ago|since when)\b",
                   re.IGNORECASE)
_COUNT = re.compile(r"\s*how (?:many|often|long|much|old)\b", re.IGNORECASE)


def memory_keys(text: str, moment: datetime | date) -> list[str]:
    """The keys of a memory with `text` whose moment (timestamp) is `moment`."""
    named = spans(text, moment)
    keys = memory_terms(text, moment, named=named)
    if named:
        keys.append(CUE_TIME)
    if _DIGIT.search(text) or not _NUMBER_WORDS.isdisjoint(_LETTERS.findall(text.lower())):
        keys.append(CUE_NUMBER)
    return keys


def query_keys(text: str, now: datetime | date, *, time: float, cue: float,
               coverage: float = 0.0) -> list[tuple[str, float]]:
    """(key, weight) pairs for a query asked at `now`: the times it names, its question's cue,
    the weight of its words in the found memories' own text."""
    keys = [(term, time) for term in query_terms(text, now)] if time > 0 else []
    if coverage > 0:
        keys.append((COVERAGE, coverage))
    if cue > 0:
        if _WHEN.match(text):
            keys.append((CUE_TIME, cue))
        elif _COUNT.match(text):
            keys.append((CUE_NUMBER, cue))
    return keys
