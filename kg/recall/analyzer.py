"""Text analysis for the keyword index: words, lower-cased, without diacritics, mapped to their
base form where the stemmer cannot (kg/recall/word_forms.py), Porter-stemmed."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

from kg.recall.word_forms import base_form

__all__ = ["WORD", "scope_prefix", "stems"]

# Letters and digits only ('_' splits words, as SQLite's unicode61 tokenizer did before).
WORD = re.compile(r"[^\W_]+")
_STEMMER = Stemmer.Stemmer("porter")


def stems(text: str) -> list[str]:
    """The Porter stems of the words of `text` (of their base forms: "bought" → "buy"), in
    order, repeats kept (term frequency)."""
    lowered = text.lower()
    if not lowered.isascii():
        lowered = "".join(c for c in unicodedata.normalize("NFKD", lowered)
                          if not unicodedata.combining(c))
    return [_stem(word) for word in WORD.findall(lowered)]


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    # Vocabularies are small next to texts: caching makes stemming a dictionary look-up.
    return str(_STEMMER.stemWord(base_form(word)))


def scope_prefix(project: str) -> str:
    """The prefix that puts a project's terms apart from every other project's (hex: opaque).

    Indexing `<prefix><stem>` instead of `<stem>` gives each project its own posting lists, so a
    recall reads only its own project's postings and a pure disjunction of term queries stays
    open to block-max WAND (top-k without scoring every match)."""
    return "p" + project.encode("utf-8").hex() + "q"
