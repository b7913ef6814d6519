"""Names made safe to print (truescore_fast/_text.py): ``visible`` escapes what could forge
a line, drive a terminal or reorder text, and nothing else; ``NameSpellings`` refuses two
spellings of one name."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from truescore_fast._text import BIDI_CONTROLS, NameSpellings, visible


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("model-03\nFLAG m9 on b1", "model-03\\nFLAG m9 on b1"),
        ("m\r1\t", "m\\r1\\t"),
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
        ("model-03\u202e evil", "model-03\\u202e evil"),  # right-to-left override
        ("a\u2066b\u2069\u200f", "a\\u2066b\\u2069\\u200f"),  # an isolate, RLM
        ("x\u2028y\u2029z\x85", "x\\u2028y\\u2029z\\x85"),  # line, paragraph, NEL
        ("lone \udc80", "lone \\udc80"),  # a lone surrogate: not even encodable
        ("\x7f\x00", "\\x7f\\x00"),
    ],
)
def test_what_could_forge_or_reorder_text_is_escaped(raw, shown):
    assert visible(raw) == shown


@pytest.mark.parametrize(
    "name", ["model-01", "Llama 3.1 (8B)", "модель", "نموذج", "模型", "a\\nb", "😀", "m\u00a0x"]
)
def test_other_text_is_left_as_it_is(name):
    # letters of any script (a right-to-left script's letters too), emoji, a backslash, a
    # no-break space: nothing that breaks a line or reorders what follows it
    assert visible(name) == name


@given(st.text())
def test_visible_text_is_one_line_without_controls(text):
    shown = visible(text)
    assert "\n" not in shown and "\r" not in shown
    assert not any(c in BIDI_CONTROLS for c in shown)
    assert all(unicodedata.category(c) not in ("Cc", "Cs", "Zl", "Zp") for c in shown)
    shown.encode("utf-8")  # printable to any UTF-8 stream


def test_bidi_controls_are_every_bidi_formatting_character():
    # UAX #9's explicit embeddings, overrides and isolates (found by their Bidi_Class), and
    # its three implicit marks (ALM, LRM, RLM: Python reports their class as AL, L, R)
    classes = {"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}
    explicit = {c for c in map(chr, range(0x10000)) if unicodedata.bidirectional(c) in classes}
    assert explicit | {"\u061c", "\u200e", "\u200f"} == set(BIDI_CONTROLS)


def test_two_spellings_of_one_name_are_refused_naming_both():
    names = NameSpellings()
    names.check("model", "m1", "row 1")
    names.check("model", "m1", "row 2")  # the same spelling again
    names.check("benchmark", "m1 ", "row 2")  # another role
    with pytest.raises(ValueError, match=r"^row 3: model 'm1 ' and 'm1' \(row 1\) differ only"):
        names.check("model", "m1 ", "row 3")
    with pytest.raises(ValueError, match=r"^row 4: model 'm1\\xa0' and 'm1' .* differ only"):
        names.check("model", "m1\u00a0", "row 4")
    names.check("model", "model a", "row 5")
    with pytest.raises(ValueError, match=r"^row 6: model 'model\\xa0a' .* look the same"):
        names.check("model", "model\u00a0a", "row 6")
