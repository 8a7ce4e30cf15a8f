"""Time expressions in memories and queries, resolved to calendar terms for the keyword index.

A memory's own moment (its timestamp) and the moments its text names ("yesterday", "last week",
"in June", "3 May 2023", "two weeks ago"), resolved against that timestamp, become terms such as
`d20230507` (a day), `w2023w18` (an ISO week), `m202305` (a month), `y2023` and `o05` (May of
any year). A query's explicit dates and its relative ones (resolved against the recall's
moment) become terms of their own grain only, so "on 7 May 2023" matches a memory of that day or
one that says "yesterday" on 8 May, and "in May 2023" any moment of that month.

>>> from datetime import datetime
>>> spans("I went there yesterday", datetime(2023, 5, 8))
[Span(start=datetime.date(2023, 5, 7), grain='day')]
>>> query_terms("What did Mel paint on 13 October, 2023?", datetime(2026, 1, 1))
['d20231013']
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

__all__ = ["Span", "memory_terms", "query_terms", "spans"]

_MONTHS = {
    name: number for number, names in enumerate((
        ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
        ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
        ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
        ("december", "dec")), start=1) for name in names
}
_WEEKDAYS = {name: i for i, name in enumerate(
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
_WEEKDAYS.update(tues=1, weds=2, thurs=3, fri=4)
_FUZZY = {"few", "several"}  # "a few days ago": a week, not a day
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3,
           "couple of": 2, "few": 3, "several": 3}
# Month names: the full names everywhere, abbreviations only beside a day or a year ("may",
# "march" and "mar" are also plain words: a bare name counts only when capitalised).
_MONTH = (r"(?P<mo>January|February|March|April|May|June|July|August|September|October|"
          r"November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)\.?")
_DAY = r"(?P<d>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<y>(?:19|20)\d\d)"
_COUNT = (r"(?P<n>\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|(?:a )?couple of|"
          r"(?:a )?few|several)")
_PATTERNS = [
    ("iso", rf"\b{_YEAR}-(?P<mo>[01]\d)-(?P<d>[0-3]\d)\b"),
    ("dmy", rf"\b{_DAY}(?: of)? {_MONTH},?(?: {_YEAR})?\b"),
    ("mdy", rf"\b{_MONTH} {_DAY}\b(?:,? {_YEAR}\b)?"),
    ("my", rf"\b{_MONTH},? {_YEAR}\b"),
    ("ago", rf"\b{_COUNT} (?P<unit>day|weekend|week|month|year)s? (?:ago|earlier|back)\b"),
    ("before", rf"\b(?:the )?(?:{_COUNT} )?(?P<unit>day|week|weekend|month|year)s? before\b"),
    ("rel", r"\b(?P<which>last|this|next|past|previous|coming) (?P<unit>weekend|week|month|"
            r"year|monday|tuesday|wednesday|thursday|friday|saturday|sunday|tues|thurs|weds|fri|"
            r"night|morning|afternoon|evening)\b"),
    ("word", r"\b(?P<word>yesterday|today|tonight|tomorrow|the other day)\b"),
    ("month", r"\b(?:(?P<which>last|this|next|in|of|since|during|until|early|late|mid) )?"
              r"(?P<mo>January|February|March|April|May(?! (?:I|we|you|be|not)\b)|June|July|"
              rf"August|September|October|November|December)\b(?:,? {_YEAR}\b)?"),
    ("year", rf"\b(?:in|of|since|during|until|from|by|back in) {_YEAR}\b"),
    ("weekday", r"\b(?:on )?(?P<wd>Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"),
]
_CASED = {"month", "weekday"}  # bare names: only capitalised (May the month, not may the verb)
_DIGITS = frozenset({"0"})  # stands for "the text has a number"
_UNITS = frozenset(["weekend", "week", "month", "year", "night", "morning", "afternoon",
                    "evening", "tues", "thurs", "weds", "fri", *_WEEKDAYS])
# The words a pattern cannot match without: a text is scanned only with the patterns its words
# allow (most texts: none). Scanning every text with all of them cost ~0.5 ms per 100
# characters, and a remember re-indexes up to five texts.
_NEEDS: dict[str, frozenset[str]] = {
    "iso": _DIGITS, "dmy": frozenset(_MONTHS), "mdy": frozenset(_MONTHS),
    "my": frozenset(_MONTHS), "ago": frozenset({"ago", "earlier", "back"}),
    "before": frozenset({"before"}), "rel": _UNITS,
    "word": frozenset({"yesterday", "today", "tonight", "tomorrow", "day"}),
    "month": frozenset(n for n in _MONTHS if len(n) > 3 or n == "may"), "year": _DIGITS,
    "weekday": frozenset(_WEEKDAYS) - {"tues", "weds", "thurs", "fri"},
}
_LETTERS = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"\d")


@lru_cache(maxsize=256)
def _scanner(names: tuple[str, ...]) -> re.Pattern[str]:
    """One regex of the named patterns, in their order; each pattern's groups renamed
    `<pattern>_<group>` (group names must be unique) inside a group `_<pattern>`."""
    return re.compile("|".join(f"(?P<_{name}>{text.replace('(?P<', f'(?P<{name}_')})"
                               for name, text in _PATTERNS if name in names), re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of calendar time named by a text: its first day and its grain."""

    start: date
    grain: str  # day, weekend, week, month, year, month_of_year (start's year is a guess)


def spans(text: str, anchor: datetime | date) -> list[Span]:
    """The time spans `text` names, relative ones resolved against `anchor`."""
    day = anchor.date() if isinstance(anchor, datetime) else anchor
    words = set(_LETTERS.findall(text.lower()))
    number = _DIGIT.search(text) is not None
    active = tuple(name for name, needs in _NEEDS.items()
                   if (number if needs is _DIGITS else not needs.isdisjoint(words)))
    if not active:
        return []
    found: list[Span] = []
    pending: dict[str, str] | None = None  # "the week before": relative to the date after it
    for match in _scanner(active).finditer(text):
        kind = match.lastgroup
        assert kind is not None
        name = kind[1:]
        groups = {k.split("_", 1)[1]: v for k, v in match.groupdict().items()
                  if v is not None and k.startswith(name + "_")}
        if name in _CASED and not any(c.isupper() for c in groups.get("mo", groups.get("wd", ""))):
            continue
        try:  # "3000 years ago", "99999999999 days ago": past the calendar, not a time
            resolved = list(_resolve(name, groups, day))
            if pending is not None and name in ("iso", "dmy", "mdy") and resolved:
                found.append(_shifted(resolved[0].start, pending["unit"].lower(),
                                      -_count(pending.get("n"))))
        except (ValueError, OverflowError):
            resolved = []
        pending = groups if name == "before" else None
        found.extend(resolved)
    return found


def _resolve(name: str, g: dict[str, str], day: date) -> Iterator[Span]:
    if name in ("iso", "dmy", "mdy"):
        month = int(g["mo"]) if name == "iso" else _MONTHS[g["mo"].lower().rstrip(".")]
        year = int(g["y"]) if "y" in g else day.year
        yield Span(date(year, month, int(g["d"])), "day")
    elif name == "my":
        yield Span(date(int(g["y"]), _MONTHS[g["mo"].lower().rstrip(".")], 1), "month")
    elif name == "year":
        yield Span(date(int(g["y"]), 1, 1), "year")
    elif name == "month":
        month = _MONTHS[g["mo"].lower()]
        if "y" in g:  # "in December 2023"
            yield Span(date(int(g["y"]), month, 1), "month")
            return
        shift = {"last": -1, "next": 1}.get((g.get("which") or "").lower(), 0)
        yield Span(date(day.year + shift, month, 1), "month_of_year")
    elif name == "word":
        offset = {"yesterday": -1, "tomorrow": 1, "the other day": -3}.get(g["word"].lower(), 0)
        yield Span(day + timedelta(days=offset), "day" if offset != -3 else "week")
    elif name == "weekday":
        yield Span(_weekday(day, _WEEKDAYS[g["wd"].lower()], -1), "day")
    elif name == "ago":
        span = _shifted(day, g["unit"].lower(), -_count(g.get("n")))
        fuzzy = (g.get("n") or "").lower().removeprefix("a ") in _FUZZY
        yield Span(span.start, "week") if fuzzy and span.grain == "day" else span
    elif name == "rel":
        yield from _relative(day, g["which"].lower(), g["unit"].lower())


def _relative(day: date, which: str, unit: str) -> Iterator[Span]:
    step = {"last": -1, "past": -1, "previous": -1, "next": 1, "coming": 1}.get(which, 0)
    if unit in _WEEKDAYS:
        yield Span(_weekday(day, _WEEKDAYS[unit], step or -1), "day")
    elif unit in ("night", "morning", "afternoon", "evening"):
        yield Span(day + timedelta(days=-1 if which == "last" else 0), "day")
    else:
        yield _shifted(day, unit, step)


def _shifted(day: date, unit: str, count: int) -> Span:
    if unit == "day":
        return Span(day + timedelta(days=count), "day")
    if unit == "week":
        return Span(day + timedelta(weeks=count), "week")
    if unit == "weekend":
        saturday = _weekday(day, 5, -1) + timedelta(weeks=count + 1 if count < 0 else count)
        return Span(saturday, "weekend")
    if unit == "month":
        index = day.year * 12 + day.month - 1 + count
        return Span(date(index // 12, index % 12 + 1, 1), "month")
    return Span(date(day.year + count, 1, 1), "year")


def _weekday(day: date, weekday: int, direction: int) -> date:
    """The nearest `weekday` strictly before (direction -1) or after (+1) `day`."""
    delta = (day.weekday() - weekday) % 7 or 7
    return day - timedelta(days=delta) if direction < 0 else day + timedelta(days=(7 - delta) or 7)


def _count(text: str | None) -> int:
    if text is None:
        return 1
    text = text.lower()
    return int(text) if text.isdigit() else _COUNTS.get(text, 1)


@lru_cache(maxsize=4096)  # memories come in runs of the same day; strftime costs here
def _terms(span: Span, *, coarser: bool) -> tuple[str, ...]:
    """The index terms of a span: its own grain, and with `coarser` the grains above it."""
    d = span.start
    day, week, month = f"d{d:%Y%m%d}", "w{}w{:02d}".format(*d.isocalendar()[:2]), f"m{d:%Y%m}"
    year, of_year = f"y{d.year}", f"o{d.month:02d}"
    if span.grain == "day":
        return (day, week, month, year, of_year) if coarser else (day,)
    if span.grain == "weekend":
        sunday = d + timedelta(days=1)
        return (day, f"d{sunday:%Y%m%d}", *((week, month, year) if coarser else ()))
    if span.grain == "week":
        return (week, month, year) if coarser else (week,)
    if span.grain == "month":
        return (month, year, of_year) if coarser else (month,)
    if span.grain == "month_of_year":
        return (month, year, of_year) if coarser else (of_year,)
    return (year,)


def memory_terms(text: str, moment: datetime | date, *,
                 named: list[Span] | None = None) -> list[str]:
    """Terms for a memory: its own moment's, then those of the moments its text names
    (`named`, if the caller has them already: `spans(text, moment)`)."""
    anchor = moment.date() if isinstance(moment, datetime) else moment
    terms = list(_terms(Span(anchor, "day"), coarser=True))
    for span in spans(text, anchor) if named is None else named:
        terms += _terms(span, coarser=True)
    return list(dict.fromkeys(terms))


def query_terms(text: str, now: datetime | date) -> list[str]:
    """Terms for a query: each time it names, at its own grain (relative ones from `now`)."""
    return list(dict.fromkeys(t for span in spans(text, now) for t in _terms(span, coarser=False)))
