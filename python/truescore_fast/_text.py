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

__all__ = ["BIDI_CONTROLS", "visible"]

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
