"""api.url_form decodes a form body exactly as urllib's parse_qsl does, and fast."""

from __future__ import annotations

from urllib.parse import parse_qsl, quote

from hypothesis import given
from hypothesis import strategies as st

from api.url_form import form_fields

# Bytes that matter to form decoding, quoted-printable's `=` and line breaks among them.
_PIECES = st.sampled_from([b"%", b"=", b"&", b"+", b"a", b"F", b"3", b"0", b"g", b"\r", b"\n",
                           b"%3D", b"%25", b"%C3%A9", b"%e9", b"\xc3\xa9", b"\xff", b" ", b";",
                           b"==", b"%0A", b"%zz"])


def _reference(body: bytes) -> dict[str, list[str]] | type[UnicodeDecodeError]:
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, encoding="utf-8",
                          errors="strict")
    except UnicodeDecodeError:
        return UnicodeDecodeError
    fields: dict[str, list[str]] = {}
    for name, value in pairs:
        fields.setdefault(name, []).append(value)
    return fields


def _decoded(body: bytes) -> dict[str, list[str]] | type[UnicodeDecodeError]:
    try:
        return form_fields(body)
    except UnicodeDecodeError:
        return UnicodeDecodeError


@given(st.lists(_PIECES, max_size=40).map(b"".join))
def test_form_fields_equal_parse_qsl(body: bytes) -> None:
    assert _decoded(body) == _reference(body)


def test_a_large_encoded_update_decodes_whole() -> None:
    update = 'INSERT DATA { <http://example.org/s> <http://example.org/p> "é = 100% + x" . }'
    body = ("query=&update=" + quote(update * 20_000, safe="") + "&using-graph-uri=" +
            quote("http://example.org/g")).encode()
    assert form_fields(body) == {"query": [""], "update": [update * 20_000],
                                 "using-graph-uri": ["http://example.org/g"]}
