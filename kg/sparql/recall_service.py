"""Recall as a SPARQL SERVICE: `SERVICE <https://jido.ai/recall> { [] recall:query "…" ; … }`.

pyoxigraph has no SERVICE hook, so the endpoint reads each recall block with the one lexer
(kg.store.lexer), runs the memory service's own recall for it, and replaces the block in the
text by an equivalent `VALUES (?hit ?score ?rank) { … }` written from pyoxigraph terms (never
from the caller's text). Every other SERVICE keeps the allow-list rules of
kg.store.remote_access. The vocabulary is ontology/recall.ttl (served at /recall).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin

from pyoxigraph import Literal, NamedNode, Variable

from kg.sparql.literals import literal_at
from kg.sparql.recall_request import (
    INPUTS,
    OUTPUTS,
    RecallRequest,
    RecallServiceError,
    Value,
    request_of,
)
from kg.store.lexer import Token, prefixes, resolve, tokenize

__all__ = [
    "INPUTS", "NAMESPACE", "OUTPUTS", "SERVICE_IRI", "RecallBlock", "RecallRequest",
    "RecallServiceError", "expand", "mentions_recall", "recall_blocks",
]

SERVICE_IRI = "https://jido.ai/recall"
NAMESPACE = "https://jido.ai/recall#"


@dataclass(frozen=True, slots=True)
class RecallBlock:
    """One `SERVICE <https://jido.ai/recall> { … }` block: where it lies, what it asks."""

    start: int
    end: int
    request: RecallRequest


def mentions_recall(text: str) -> bool:
    """Tell cheaply whether `text` may hold a recall block (False is certain)."""
    return "recall" in text and "SERVICE" in text.upper()


def recall_blocks(text: str, *, base: str | None = None) -> list[RecallBlock]:
    """Every recall block of a query, parsed; RecallServiceError names what is malformed."""
    if not mentions_recall(text):
        return []
    tokens = list(tokenize(text))
    declared = prefixes(tokens)
    found: list[RecallBlock] = []
    for k, token in enumerate(tokens):
        if token.is_keyword("BASE") and k + 1 < len(tokens) and tokens[k + 1].kind == "iri":
            target = tokens[k + 1].text
            base = urljoin(base, target) if base else target
        if not token.is_keyword("SERVICE"):
            continue
        at = k + 1
        while at < len(tokens) and tokens[at].is_keyword("SILENT"):
            at += 1
        if at >= len(tokens) or resolve(tokens[at], declared, base) != SERVICE_IRI:
            continue
        if at + 1 >= len(tokens) or tokens[at + 1].text != "{":
            raise RecallServiceError("SERVICE <https://jido.ai/recall> needs a { … } block")
        close = _closing(tokens, at + 1)
        pairs = _Reader(tokens[at + 2:close], declared, base).pairs()
        found.append(RecallBlock(token.start, tokens[close].end, request_of(pairs)))
    return found


def expand(text: str, blocks: Sequence[RecallBlock],
           run: Callable[[RecallRequest], Sequence[tuple[NamedNode, float]]]) -> str:
    """`text` with every block replaced by a VALUES of its hits (run(request) gives them)."""
    parts: list[str] = []
    at = 0
    for block in blocks:
        parts += [text[at:block.start], _values(block.request, run(block.request))]
        at = block.end
    return "".join([*parts, text[at:]])


def _values(request: RecallRequest, hits: Sequence[tuple[NamedNode, float]]) -> str:
    names = [v for v in (request.hit, request.score, request.rank) if v is not None]
    rows = []
    for rank, (memory, score) in enumerate(hits, start=1):
        row: list[NamedNode | Literal] = [memory]
        if request.score is not None:
            row.append(Literal(float(score)))
        if request.rank is not None:
            row.append(Literal(rank))
        rows.append(f"({' '.join(map(str, row))})")
    return f"VALUES ({' '.join(map(str, names))}) {{ {' '.join(rows)} }}"


def _closing(tokens: list[Token], opening: int) -> int:
    depth = 0
    for k in range(opening, len(tokens)):
        if tokens[k].kind == "punct" and tokens[k].text in "{}":
            depth += 1 if tokens[k].text == "{" else -1
            if depth == 0:
                return k
    raise RecallServiceError("the recall SERVICE block is not closed with '}'")


class _Reader:
    """Reads the triples of one block: one subject, recall: predicates, single-term objects."""

    def __init__(self, tokens: list[Token], declared: dict[str, str], base: str | None) -> None:
        self.tokens, self.declared, self.base = tokens, declared, base
        self.at = 0
        self.found: list[tuple[str, Value]] = []

    def pairs(self) -> list[tuple[str, Value]]:
        """The (recall term, value) pairs of the block, in order."""
        subject: str | None = None
        while self.at < len(self.tokens):
            this = self._subject()
            if subject is not None and this != subject:
                raise RecallServiceError("a recall block holds one request: use one subject")
            subject = this
            if self.at < len(self.tokens) and self._peek() != ".":
                self._property_list(stop=".")
            while self.at < len(self.tokens) and self._peek() == ".":
                self.at += 1
        return self.found

    def _peek(self) -> str:
        return self.tokens[self.at].text if self.at < len(self.tokens) else ""

    def _subject(self) -> str:
        token = self.tokens[self.at]
        if token.text == "[" and token.kind == "punct":
            self.at += 1
            if self._peek() != "]":
                self._property_list(stop="]")
            if self._peek() != "]":
                raise RecallServiceError("a '[' in the recall block is not closed with ']'")
            self.at += 1
            return "[]"
        if token.kind == "var" or (token.kind == "word" and token.text.startswith("_:")):
            self.at += 1
            return token.text[1:] if token.kind == "var" else token.text
        raise RecallServiceError(
            f"the subject of a recall request is [], a blank node or a variable, not "
            f"{token.text[:80]!r}")

    def _property_list(self, *, stop: str) -> None:
        while self.at < len(self.tokens) and self._peek() != stop:
            name = self._predicate()
            self._object(name)
            while self._peek() == ",":
                self.at += 1
                self._object(name)
            if self._peek() not in (";", stop, ".", ""):
                raise RecallServiceError(
                    f"unexpected {self._peek()[:80]!r} in the recall block after recall:{name}")
            while self._peek() == ";":
                self.at += 1
            if self._peek() == "." and stop != ".":
                raise RecallServiceError("a '[' in the recall block is not closed with ']'")
            if self._peek() == ".":
                return

    def _predicate(self) -> str:
        token = self.tokens[self.at]
        iri = resolve(token, self.declared, self.base) if token.text != "a" else None
        if iri is None or not iri.startswith(NAMESPACE):
            raise RecallServiceError(
                f"a recall block takes only recall: terms ({NAMESPACE}), not {token.text[:80]!r}",
                details={"known_terms": [*INPUTS, *OUTPUTS]})
        name = iri[len(NAMESPACE):]
        if name not in INPUTS and name not in OUTPUTS:
            raise RecallServiceError(
                f"unknown recall term recall:{name[:80]}",
                details={"term": name[:80], "known_terms": [*INPUTS, *OUTPUTS]})
        self.at += 1
        return name

    def _object(self, name: str) -> None:
        if self.at >= len(self.tokens):
            raise RecallServiceError(f"recall:{name} has no value")
        token = self.tokens[self.at]
        value: Value
        if token.kind == "var":
            value = Variable(token.text[1:])
            self.at += 1
        elif (read := literal_at(self.tokens, self.at, declared=self.declared,
                                 base=self.base)) is not None:
            value, self.at = read
        elif (iri := resolve(token, self.declared, self.base)) is not None:
            value = NamedNode(iri)
            self.at += 1
        else:
            raise RecallServiceError(
                f"recall:{name} takes a single literal or variable, not {token.text[:80]!r}")
        self.found.append((name, value))
