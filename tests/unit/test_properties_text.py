"""``hoodie.properties`` text is read by Java's ``Properties.load`` rules: a key ends at the first
unescaped ``=``, ``:`` or white space; escapes, ``\\uXXXX``, continuation lines and ``#``/``!``
comments as Java reads them."""

from __future__ import annotations

import pytest

from engine.fs.properties import parse_properties_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a b\n", {"a": "b"}),  # white space separates, as in Java
        ("a=b\nc:d\ne   f\n", {"a": "b", "c": "d", "e": "f"}),
        ("a\\ b=c\n", {"a b": "c"}),  # an escaped blank belongs to the key
        ("k=x\\:y\\=z\n", {"k": "x:y=z"}),  # Hudi escapes ':' and '=' in values
        ("k=\\u0041\\tB\n", {"k": "A\tB"}),
        ("# comment\n! comment too\n  k = v  \n", {"k": "v  "}),  # Java keeps trailing blanks
        ("k=first \\\n    second\n", {"k": "first second"}),  # a continued line
        ("k\n", {"k": ""}),
        ("k=1\nk=2\n", {"k": "2"}),
    ],
)
def test_java_properties_rules(text: str, expected: dict[str, str]) -> None:
    assert parse_properties_text(text) == expected
