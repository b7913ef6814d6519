"""Text that came from a file, made safe to print (NumPy-free: the command line's error
path uses it without loading the library). Not a public API.

A name read from a file (a model, a benchmark, a zip member) is printed in tables, in error
messages and in figures. Printed raw, a newline in it starts a line that reads as a line
of the output's own (a ``FLAG`` line, say), an escape sequence drives the terminal, and a
right-to-left override turns the characters after it around ("model-03\\u202e evil" is
shown as "model-03live "). :func:`visible` writes each such character as an escape
instead; everything else, non-Latin letters included, is left as it is.
"""

from __future__ import annotations

import unicodedata

__all__ = ["BIDI_CONTROLS", "NameSpellings", "visible"]

BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
"""The Unicode bidirectional formatting characters (UAX #9: ALM, LRM, RLM, the embeddings,
overrides and isolates and their terminators): each reorders the text around it."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _hidden(char: str) -> bool:
    # Cc: C0 and C1 controls (escape sequences, newlines, DEL); Cs: a lone surrogate (not
    # encodable: printing it fails); Zl, Zp: line and paragraph separators (a new line)
    return char in BIDI_CONTROLS or unicodedata.category(char) in ("Cc", "Cs", "Zl", "Zp")


def visible(text: str) -> str:
    """``text`` with every control character, line or paragraph separator, bidirectional
    formatting character and lone surrogate written as a Python-style escape (``\\n``,
    ``\\x1b``, ``\\u202e``, ``\\udc80``): printed on one line, in the order it is stored,
    driving nothing. Other text is unchanged (a backslash too)."""
    if text.isprintable():  # the common case (False for every Cc, Cs, Zl, Zp and Cf
        return text  # character, so for every bidi control)
    return "".join(_escape(c) if _hidden(c) else c for c in text)


class NameSpellings:
    """The rule for names read from a table (models, benchmarks): white space at either
    end is dropped (Unicode white space: a no-break space too), so ``"m1 "`` is ``m1``.
    Two spellings that would become one name this way, or that look the same (equal once
    NFKC-normalised with every run of white space made one space, as ``"model a"`` and
    ``"model\\u00a0a"``), are refused, naming both and where each was first read: they are
    either one model written two ways (fix the table) or two models that cannot be told
    apart in any output."""

    def __init__(self) -> None:
        self._first: dict[tuple[str, str], tuple[str, str]] = {}

    def check(self, role: str, raw: object, where: str) -> None:
        """Record ``raw`` (a cell's text) read as a ``role`` at ``where``; a name holding a
        lone surrogate (JSON's ``"\\udc80"``), which no file can hold, is refused too."""
        text = str(raw)
        if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
            raise ValueError(
                f"{where}: {role} {text!r} holds a lone surrogate, which no UTF-8 file or "
                "table can hold: fix the name"
            )
        key = (role, " ".join(unicodedata.normalize("NFKC", text).split()))
        first = self._first.setdefault(key, (text, where))
        if first[0] != text:
            same = first[0].strip() == text.strip()
            how = "differ only by white space at their ends" if same else "look the same"
            raise ValueError(
                f"{where}: {role} {text!r} and {first[0]!r} ({first[1]}) {how}: write one "
                "spelling (or names that differ visibly)"
            )
