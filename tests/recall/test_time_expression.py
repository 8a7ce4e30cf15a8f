"""Time expressions resolved against a memory's moment, and the calendar terms they index as."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from kg.recall.time_expression import Span, memory_terms, query_terms, spans

MONDAY = datetime(2023, 5, 8, 13, 56)  # a Monday


@pytest.mark.parametrize(("text", "expected"), [
    ("I went to a support group yesterday", [Span(date(2023, 5, 7), "day")]),
    ("we're off tomorrow", [Span(date(2023, 5, 9), "day")]),
    ("It was great today", [Span(date(2023, 5, 8), "day")]),
    ("last night was fun", [Span(date(2023, 5, 7), "day")]),
    ("I ran a race last Saturday", [Span(date(2023, 5, 6), "day")]),
    ("joined a group last Tues", [Span(date(2023, 5, 2), "day")]),
    ("last week I started", [Span(date(2023, 5, 1), "week")]),
    ("next month we move", [Span(date(2023, 6, 1), "month")]),
    ("I painted it last year", [Span(date(2022, 1, 1), "year")]),
    ("camping last weekend", [Span(date(2023, 5, 6), "weekend")]),
    ("camping two weekends ago", [Span(date(2023, 4, 29), "weekend")]),
    ("3 days ago", [Span(date(2023, 5, 5), "day")]),
    ("a few days ago", [Span(date(2023, 5, 5), "week")]),
    ("two weeks ago", [Span(date(2023, 4, 24), "week")]),
    ("four years ago I moved", [Span(date(2019, 1, 1), "year")]),
    ("on 13 October, 2023", [Span(date(2023, 10, 13), "day")]),
    ("on October 13, 2023", [Span(date(2023, 10, 13), "day")]),
    ("on the 3rd of June", [Span(date(2023, 6, 3), "day")]),
    ("2023-02-01 it opened", [Span(date(2023, 2, 1), "day")]),
    ("in December 2023", [Span(date(2023, 12, 1), "month")]),
    ("Back in June we met", [Span(date(2023, 6, 1), "month_of_year")]),
    ("since 2019", [Span(date(2019, 1, 1), "year")]),
])
def test_expressions_resolve_against_the_anchor(text: str, expected: list[Span]) -> None:
    assert spans(text, MONDAY) == expected


def test_the_week_before_a_date_is_relative_to_that_date() -> None:
    found = spans("What did John do the week before August 3, 2023?", MONDAY)
    assert found == [Span(date(2023, 7, 27), "week"), Span(date(2023, 8, 3), "day")]


@pytest.mark.parametrize("text", [
    "you may march on", "May I ask?", "a mar on the surface", "I was sad in 1850",
    "the june bug", "sat on the sun deck"])
def test_plain_words_are_not_dates(text: str) -> None:
    assert spans(text, MONDAY) == []


@pytest.mark.parametrize("text", [
    "on 31 February, 2023", "3000 years ago", "99999999999 days ago", "12345678 months ago",
    "the 99999999999 weeks before 3 May 2023"])
def test_times_past_the_calendar_are_ignored(text: str) -> None:
    assert spans(text, MONDAY) == []


def test_memory_terms_hold_the_anchor_and_every_coarser_grain() -> None:
    terms = memory_terms("I went there yesterday", MONDAY)
    assert terms[:5] == ["d20230508", "w2023w19", "m202305", "y2023", "o05"]
    assert {"d20230507", "w2023w18"} <= set(terms)  # yesterday was a Sunday: the week before
    assert len(terms) == len(set(terms))


def test_query_terms_are_of_their_own_grain_only() -> None:
    now = datetime(2026, 1, 1)
    assert query_terms("What happened on 7 July, 2023?", now) == ["d20230707"]
    assert query_terms("What did Maria do in December 2023?", now) == ["m202312"]
    assert query_terms("When did she go camping in June?", now) == ["o06"]
    assert query_terms("What did we decide yesterday?", now) == ["d20251231"]
    assert query_terms("Which database did we pick?", now) == []
