"""Reading the graph patterns of a SPARQL query over the lexer's tokens, to rewrite its triples.

`PatternReader` walks a query as the grammar nests it: groups, sub-selects, OPTIONAL, MINUS,
UNION, GRAPH, FILTER/BIND expressions (and the EXISTS groups inside them); it skips CONSTRUCT
templates, VALUES data and SERVICE groups (sent as written). Each subject's triples
(TriplesSameSubjectPath) are handed to `rewrite_subject`, which may return replacement text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urljoin

from kg.sparql.literals import literal_at
from kg.sparql.triple_pattern import PatternError, Term, Triple, Verb
from kg.store.lexer import Token, prefixes, resolve

__all__ = ["PatternReader"]

_OPEN = {"{": "}", "(": ")", "[": "]"}


@dataclass
class PatternReader:
    """Walks a query's patterns; subclasses decide what each subject's triples become."""

    text: str
    tokens: list[Token]
    base: str | None = None
    edits: list[tuple[int, int, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.declared = prefixes(self.tokens)
        self.partner = _partners(self.tokens)

    # -- what subclasses provide -------------------------------------------------------------

    def rewrite_subject(self, subject: Term, items: list[tuple[Verb, list[Term]]],
                        nested: list[Triple]) -> str | None:
        """Replacement text for a subject's triples (None keeps them as written)."""
        raise NotImplementedError

    # -- helpers for subclasses ----------------------------------------------------------------

    def source(self, start: int, end: int) -> str:
        """The text of tokens[start:end] as written."""
        return self.text[self.tokens[start].start:self.tokens[end - 1].end]

    def iri_of(self, k: int) -> str | None:
        """The absolute IRI token k denotes (`a` is rdf:type), or None."""
        token = self.tokens[k]
        if token.kind == "word" and token.text == "a":
            return "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
        if token.kind == "word" and token.text.startswith("_:"):
            return None
        return resolve(token, self.declared, self.base)

    # -- the walk ------------------------------------------------------------------------------

    def walk(self, start: int = 0, stop: int | None = None) -> None:
        """Read tokens[start:stop] outside any group (a query, a sub-select, an expression)."""
        stop = len(self.tokens) if stop is None else stop
        k = start
        while k < stop:
            token = self.tokens[k]
            if token.is_keyword("BASE") and k + 1 < stop and self.tokens[k + 1].kind == "iri":
                iri = self.tokens[k + 1].text
                self.base = urljoin(self.base, iri) if self.base else iri
            if token.is_keyword("CONSTRUCT") and k + 1 < stop:
                k = self._construct(k, stop)
            elif token.is_keyword("VALUES"):
                k = self._values(k)
            elif token.is_keyword("SERVICE"):
                k = self._service(k)
            elif self._is(k, "{"):
                k = self.group(k)
            else:
                k += 1

    def group(self, k: int) -> int:
        """Read the group opening at token k; return the index after its '}'."""
        end = self._close(k)
        if k + 1 < end and self.tokens[k + 1].is_keyword("SELECT"):
            self.walk(k + 1, end)
            return end + 1
        i = k + 1
        while i < end:
            token = self.tokens[i]
            if self._is(i, ".") or token.is_keyword("OPTIONAL", "MINUS", "UNION"):
                i += 1
            elif self._is(i, "{"):
                i = self.group(i)
            elif token.is_keyword("GRAPH"):
                i += 2
            elif token.is_keyword("SERVICE"):
                i = self._service(i)
            elif token.is_keyword("VALUES"):
                i = self._values(i)
            elif token.is_keyword("FILTER", "BIND"):
                i = self._expression(i + 1)
            else:
                i = self._subject_triples(i)
        return end + 1

    def _construct(self, k: int, stop: int) -> int:
        if self._is(k + 1, "{"):  # the template: what the query writes, not a pattern
            return self._close(k + 1) + 1
        at = k + 1
        while at < stop and not self._is(at, "{"):
            at += 1
        if at >= stop:
            return stop
        before = len(self.edits)
        after = self.group(at)
        if len(self.edits) > before:  # CONSTRUCT WHERE { P } -> CONSTRUCT { P } WHERE { P' }
            template = self.text[self.tokens[at].start:self.tokens[after - 1].end]
            end = self.tokens[k].end
            self.edits.append((end, end, f" {template}"))
        return after

    def _values(self, k: int) -> int:
        at = k + 1
        while at < len(self.tokens) and not self._is(at, "{"):
            at += 1
        return self._close(at) + 1 if at < len(self.tokens) else at

    def _service(self, k: int) -> int:
        at = k + 1
        while at < len(self.tokens) and not self._is(at, "{"):
            at += 1
        return self._close(at) + 1 if at < len(self.tokens) else at

    def _expression(self, i: int) -> int:
        while i < len(self.tokens) and self.tokens[i].is_keyword("NOT", "EXISTS"):
            i += 1
        if i < len(self.tokens) and self._is(i, "{"):
            return self.group(i)
        if i + 1 < len(self.tokens) and not self._is(i, "(") and self._is(i + 1, "("):
            i += 1  # a function call: FILTER regex(...), FILTER <f>(...)
        if i >= len(self.tokens) or not self._is(i, "("):
            raise self._unreadable(i, "an expression in parentheses")
        end = self._close(i)
        self.walk(i + 1, end)
        return end + 1

    # -- triples -------------------------------------------------------------------------------

    def _subject_triples(self, i: int) -> int:
        nested: list[Triple] = []
        subject, i = self._term(i, nested)
        items: list[tuple[Verb, list[Term]]] = []
        if subject.kind == "node" and not self._starts_verb(i):
            pass  # a blank-node property list or collection standing alone
        else:
            i = self._property_list(i, subject, items, nested)
        end = self.tokens[i - 1].end
        replacement = self.rewrite_subject(subject, items, nested)
        if replacement is not None:
            self.edits.append((self.tokens[subject.start].start, end, replacement))
        return i

    def _property_list(self, i: int, subject: Term, items: list[tuple[Verb, list[Term]]],
                       nested: list[Triple]) -> int:
        while True:
            verb, i = self._verb(i)
            objects: list[Term] = []
            while True:
                term, i = self._term(i, nested)
                objects.append(term)
                if i < len(self.tokens) and self._is(i, "{") and self._is(i + 1, "|"):
                    raise PatternError("annotation syntax {| … |} cannot be entailed")
                if not self._is(i, ","):
                    break
                i += 1
            items.append((verb, objects))
            while self._is(i, ";"):
                i += 1
            if not self._starts_verb(i):
                return i

    def _names_iri(self, i: int) -> bool:
        token = self.tokens[i]
        return token.kind == "iri" or (token.kind == "word" and (
            token.text == "a" or (":" in token.text and not token.text.startswith("_:"))))

    def _starts_verb(self, i: int) -> bool:
        if i >= len(self.tokens):
            return False
        token = self.tokens[i]
        if token.kind in ("var", "iri"):
            return True
        if token.kind == "word":
            return (":" in token.text and not token.text.startswith("_:")) or token.text == "a"
        return token.kind == "punct" and token.text in ("^", "!", "(")

    def _verb(self, i: int) -> tuple[Verb, int]:
        token = self.tokens[i]
        if token.kind == "var":
            return Verb("var", i, i + 1), i + 1
        start, expect, depth = i, True, 0
        iris: list[str] = []
        negated = False
        while i < len(self.tokens):
            token = self.tokens[i]
            if expect and token.kind == "punct" and token.text in ("^", "!"):
                negated = negated or token.text == "!"
            elif expect and self._is(i, "("):
                depth += 1
            elif expect and self._names_iri(i):
                iris.append(self.iri_of(i) or "")  # "" : an undeclared prefix (parser says so)
                expect = False
            elif not expect and token.kind == "punct" and token.text in ("*", "+", "?"):
                pass
            elif not expect and depth and self._is(i, ")"):
                depth -= 1
            elif not expect and token.kind == "punct" and token.text in ("/", "|"):
                expect = True
            else:
                break
            i += 1
        if expect or depth or i == start:
            raise self._unreadable(start, "a predicate")
        kind = "iri" if i == start + 1 else "path"
        return Verb(kind, start, i, tuple(iris), negated), i

    def _term(self, i: int, nested: list[Triple]) -> tuple[Term, int]:
        if i >= len(self.tokens):
            raise self._unreadable(i, "a subject or object")
        token = self.tokens[i]
        if token.kind == "var":
            return Term("var", i, i + 1), i + 1
        if token.kind == "word" and token.text.startswith("_:"):
            return Term("bnode", i, i + 1), i + 1
        if token.kind == "iri" or (token.kind == "word" and ":" in token.text):
            return Term("iri", i, i + 1, self.iri_of(i)), i + 1
        if (read := literal_at(self.tokens, i, declared=self.declared,
                               base=self.base)) is not None:
            return Term("literal", i, read[1]), read[1]
        if self._is(i, "[") and self._is(i + 1, "]"):
            return Term("bnode", i, i + 2), i + 2
        if self._is(i, "(") and self._is(i + 1, ")"):
            return Term("node", i, i + 2), i + 2
        if self._is(i, "[") or self._is(i, "("):
            return self._node(i, nested)
        if token.kind == "punct" and token.text == "<<":
            depth, k = 0, i
            while k < len(self.tokens):
                depth += {"<<": 1, ">>": -1}.get(self.tokens[k].text, 0)
                k += 1
                if depth == 0:
                    return Term("node", i, k), k
        raise self._unreadable(i, "a subject or object")

    def _node(self, i: int, nested: list[Triple]) -> tuple[Term, int]:
        end = self._close(i)
        node = Term("node", i, end + 1)
        inner: list[Triple] = []
        if self._is(i, "["):
            items: list[tuple[Verb, list[Term]]] = []
            if self._property_list(i + 1, node, items, inner) != end:
                raise self._unreadable(i, "a blank-node property list")
            inner += [Triple(node, verb, o, True) for verb, objects in items for o in objects]
        else:
            k = i + 1
            while k < end:
                _, k = self._term(k, inner)
        nested += [Triple(t.subject, t.verb, t.object, True) for t in inner]
        return node, end + 1

    # -- tokens --------------------------------------------------------------------------------

    def _is(self, k: int, punct: str) -> bool:
        return k < len(self.tokens) and self.tokens[k].kind == "punct" \
            and self.tokens[k].text == punct

    def _close(self, k: int) -> int:
        found = self.partner.get(k)
        if found is None:
            raise self._unreadable(k, "a closing bracket")
        return found

    def _unreadable(self, k: int, wanted: str) -> PatternError:
        shown = self.tokens[k].text[:60] if k < len(self.tokens) else "the end"
        at = self.tokens[k].start if k < len(self.tokens) else len(self.text)
        return PatternError(f"cannot read {wanted} at {shown!r} (character {at}) to entail it",
                            details={"position": at})


def _partners(tokens: list[Token]) -> dict[int, int]:
    found: dict[int, int] = {}
    stack: list[int] = []
    for k, token in enumerate(tokens):
        if token.kind != "punct":
            continue
        if token.text in _OPEN:
            stack.append(k)
        elif token.text in ("}", ")", "]") and stack \
                and _OPEN[tokens[stack[-1]].text] == token.text:
            found[stack.pop()] = k
        elif token.text in ("}", ")", "]"):
            stack.clear()  # unbalanced: pyoxigraph reports it; the walk stops at the gap
    return found

