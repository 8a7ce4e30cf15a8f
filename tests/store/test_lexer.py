"""The one SPARQL tokenizer: the grammar's terminals, and clause helpers built on them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kg.store.lexer import dataset_clauses, query_form, tokenize, with_using
from tests.store.sparql_gen import iris, strings


def kinds(text: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(text)]


@pytest.mark.parametrize(("text", "expected"), [
    # IRIREF: no space, none of <>"{}|^`\ between '<' and '>' ('\u' escapes allowed).
    ("<http://x/a(b)'c#d>", [("iri", "http://x/a(b)'c#d")]),
    ("<a\\u0041>", [("iri", "a\\u0041")]),
    ("1<2", [("number", "1"), ("punct", "<"), ("number", "2")]),
    ("?a <b c> ?d", [("var", "?a"), ("punct", "<"), ("word", "b"), ("word", "c"),
                     ("punct", ">"), ("var", "?d")]),
    ("1<((1))||2>1", [("number", "1"), ("punct", "<"), ("punct", "("), ("punct", "("),
                      ("number", "1"), ("punct", ")"), ("punct", ")"), ("punct", "||"),
                      ("number", "2"), ("punct", ">"), ("number", "1")]),
    ("<a{b>", [("punct", "<"), ("word", "a"), ("punct", "{"), ("word", "b"), ("punct", ">")]),
    ("<<( <a:b> )>> <= >= != && ^^", [("punct", "<<"), ("punct", "("), ("iri", "a:b"),
                                        ("punct", ")"), ("punct", ">>"), ("punct", "<="),
                                        ("punct", ">="), ("punct", "!="), ("punct", "&&"),
                                        ("punct", "^^")]),
    # The four string forms, their escapes, and quotes of the other kinds inside them.
    ("'a\\'(\"' \"b\\\"{'\"", [("string", "'a\\'(\"'"), ("string", "\"b\\\"{'\"")]),
    ("'''a''b'c''' \"\"\"x\"\"y\n\"\"\"", [("string", "'''a''b'c'''"),
                                           ("string", '"""x""y\n"""')]),
    ("'''a''''", [("string", "'''a'''"), ("string", "'")]),
    ("'open (\n?x", [("string", "'open ("), ("var", "?x")]),  # a short string ends at the line
    ("'''never (", [("string", "'''never (")]),
    # Comments run to the line end, outside IRIs and strings.
    ("?a # { ( [ \n ?b", [("var", "?a"), ("var", "?b")]),
    ("<a#b> '#' ?c", [("iri", "a#b"), ("string", "'#'"), ("var", "?c")]),
    # Prefixed names, escapes included; variables, numbers, language tags, keywords.
    ("ex:a\\(b\\)\\#c ex: :x _:b1 ex:a.b.", [("word", "ex:a\\(b\\)\\#c"), ("word", "ex:"),
                                              ("word", ":x"), ("word", "_:b1"),
                                              ("word", "ex:a.b"), ("punct", ".")]),
    ("?x $y ?? 1.5e-3 .5 -2", [("var", "?x"), ("var", "$y"), ("punct", "?"), ("punct", "?"),
                               ("number", "1.5e-3"), ("number", ".5"), ("punct", "-"),
                               ("number", "2")]),
    ('"x"@en-US SELECT a', [("string", '"x"'), ("langtag", "@en-US"), ("word", "SELECT"),
                            ("word", "a")]),
])
def test_terminals(text: str, expected: list[tuple[str, str]]) -> None:
    assert kinds(text) == expected


_PLAIN = st.sampled_from(["?x", "$y", "ex:a\\(b", "SELECT", "1.5", "(", ")", "{", "}", "[",
                          "]", "<=", "&&", "||", "!=", "<<", ">>", "^^", ".", ";", ","])


@given(st.lists(st.one_of(strings(), iris(), _PLAIN), max_size=30),
       st.lists(st.sampled_from([" ", "\n", "\t", " # ( { [ ' \" <\n"]), min_size=30,
                max_size=30))
def test_tokens_come_back_as_written(words: list[str], gaps: list[str]) -> None:
    text = "".join(f"{word}{gap}" for word, gap in zip(words, gaps, strict=False))
    tokens = list(tokenize(text))
    assert [text[t.start:t.end] for t in tokens] == words
    assert all(t.kind == "string" for t, w in zip(tokens, words, strict=True) if w[0] in "'\"")
    assert all(t.kind == "iri" for t, w in zip(tokens, words, strict=True)
               if w.startswith("<h"))


def test_clause_helpers_read_tokens() -> None:
    text = ("PREFIX ex: <http://ex.org/> # FROM <http://no/>\n"
            "SELECT ?s FROM ex:g FROM NAMED <http://n> WHERE { ?s ?p 'FROM <x>' }")
    assert query_form(text) == "SELECT"
    assert dataset_clauses(text) == (["http://ex.org/g"], ["http://n"])
    update = "DELETE { ?s ?p ?o } WHERE { ?s ?p 'WHERE' }"
    assert with_using(update, default=["http://g"], named=[]) == (
        "DELETE { ?s ?p ?o } USING <http://g> WHERE { ?s ?p 'WHERE' }")
