"""The error for a bad argument, in one place: Python's checks and the compiled core raise
the same classes, and each error carries the name of the argument it refuses.

A leaf module (the standard library only): the command line imports it without NumPy,
and the compiled core fetches its classes when it loads (bindings/module.cpp), so this
module must never import the core.

The message (``str(error)``) reads as it always did: it starts with the argument's name
("alpha must lie in (0, 1); got 2"). ``error.argument`` is that name, for a program to
read instead of the text; :meth:`ArgumentError.render` writes the message with each
argument it names shown another way (the command line shows its flags: "--alpha must lie
in (0, 1); got 2").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ArgumentError", "ArgumentTypeError", "SizeError"]


class _Shown(dict[str, str]):
    """The names of a template's fields, each as ``shown`` writes it."""

    def __init__(self, shown: Callable[[str], str]) -> None:
        super().__init__()
        self._shown = shown

    def __missing__(self, name: str) -> str:
        return self._shown(name)


def literal(text: str) -> str:
    """``text`` for a template: its braces doubled, so a value that holds one (a dict's
    repr, a path) is not read as an argument's name."""
    return text.replace("{", "{{").replace("}", "}}")


class ArgumentError(ValueError):
    """A value one argument must not take: ``argument`` is the argument's name (as the
    caller spells it, ``"n_bootstrap"``). A ``ValueError``; :class:`ArgumentTypeError`
    (also a ``TypeError``) for a value of the wrong type, :class:`SizeError` (also a
    ``MemoryError``) for a size that cannot fit in memory, so ``except ArgumentError``
    catches every one and ``except ValueError`` / ``TypeError`` / ``MemoryError`` what
    they caught before.

    ``message`` is the message; a message that names arguments other than at its start
    ("use a smaller n_bootstrap") is given as a ``template`` instead, each argument name
    in braces (``"{n_bootstrap} needs 80 GB ...; use a smaller {n_bootstrap}"``, other
    braces doubled: :func:`literal`), which :meth:`render` fills in.
    """

    argument: str
    template: str | None

    def __init__(self, argument: str, message: str | None = None, *, template: str | None = None):
        if message is None:
            if template is None:
                raise TypeError("ArgumentError needs a message or a template")
            message = template.format_map(_Shown(str))
        super().__init__(message)
        self.argument = argument
        self.template = template

    def render(self, shown: Callable[[str], str]) -> str:
        """The message with each argument name it gives written as ``shown(name)``: the
        template's fields, or else the name the message starts with."""
        if self.template is not None:
            return self.template.format_map(_Shown(shown))
        message = str(self)
        rest = message[len(self.argument) :]
        if message.startswith(self.argument) and not (rest[:1].isalnum() or rest[:1] == "_"):
            return shown(self.argument) + rest
        return message

    def __reduce__(self) -> tuple[Any, ...]:
        # picklable (a study's worker process sends its errors back): rebuilt from the
        # argument and the message, the template as state
        return (type(self), (self.argument, str(self)), {"template": self.template})


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument of the wrong type (a string where a number belongs): an
    :class:`ArgumentError` that is also a ``TypeError``."""


class SizeError(ArgumentError, MemoryError):
    """An argument asks for more memory than this process can have, refused before
    anything is allocated. A ``MemoryError`` (what running out would have raised, and what
    truescore raises there) that is also a ``ValueError`` (the argument's value is what is
    wrong), so either ``except`` catches it; an :class:`ArgumentError`, so it names the
    argument (``argument``)."""
