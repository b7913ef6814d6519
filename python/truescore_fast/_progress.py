"""The progress bar of long runs (the studies, the suite audit): tqdm on stderr when it is
installed, else a plain stderr line at most once a second. ``enabled=None`` (the default
of the library's ``progress`` arguments) opens it only after a run has taken a second, so
quick calls print nothing; the command line passes None only when stderr is a terminal."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

__all__ = ["Progress", "auto_progress_after"]


def auto_progress_after() -> float:
    """Seconds before an automatic (``progress=None``) bar appears: 1, or the value of the
    environment variable ``TRUESCORE_FAST_PROGRESS_AFTER`` (the tests set 0, so whether a
    bar appears does not depend on how fast the machine is)."""
    try:
        return max(float(os.environ.get("TRUESCORE_FAST_PROGRESS_AFTER", "1")), 0.0)
    except ValueError:
        return 1.0


class Progress:
    """tqdm when installed (else a plain stderr line); ``None`` starts it after 1 s."""

    def __init__(self, enabled: bool | None, total: int, desc: str, unit: str = "rep") -> None:
        self.enabled, self.total, self.desc, self.unit = enabled, total, desc, unit
        self.done = 0
        self.start = time.perf_counter()
        self.bar: Any = None
        self.last_print = 0.0
        self.after = auto_progress_after()

    def _open(self) -> None:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            self.bar = False
            return
        self.bar = tqdm(total=self.total, desc=self.desc, unit=self.unit, initial=self.done)

    def update(self, count: int) -> None:
        self.done += count
        if self.enabled is False:
            return
        now = time.perf_counter()
        if self.bar is None and (self.enabled or now - self.start >= self.after):
            self._open()
            if self.bar:
                return
        if self.bar:
            self.bar.update(count)
        elif self.bar is False and now - self.last_print > 1.0:
            self.last_print = now
            print(f"\r{self.desc}: {self.done}/{self.total}", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar:
            self.bar.close()
        elif self.bar is False and self.last_print:
            print(file=sys.stderr)
