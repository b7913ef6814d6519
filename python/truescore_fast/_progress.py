"""The progress bar of long runs (the studies, the suite audit): tqdm on stderr when it is
installed, else a plain stderr line at most once a second. ``enabled=None`` (the default
of the library's ``progress`` arguments) opens it only after a run has taken a second, so
quick calls print nothing; the command line passes None only when stderr is a terminal."""

from __future__ import annotations

import math
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
    """tqdm when installed (else a plain stderr line); ``None`` starts it after 1 s.

    ``done``: units already done when it starts (a resumed run); ``unit_scale``: tqdm's
    k/M prefixes; ``rate``: the plain line also says the units per second and the time
    left (and is printed once more at the end)."""

    def __init__(
        self,
        enabled: bool | None,
        total: int,
        desc: str,
        unit: str = "rep",
        *,
        done: int = 0,
        unit_scale: bool = False,
        rate: bool = False,
    ) -> None:
        self.enabled, self.total, self.desc, self.unit = enabled, total, desc, unit
        self.unit_scale, self.rate = unit_scale, rate
        self.done = self.first = done
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
        self.bar = tqdm(
            total=self.total,
            desc=self.desc,
            unit=self.unit,
            initial=self.done,
            unit_scale=self.unit_scale,
        )

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
        elif self.bar is False and (
            now - self.last_print > 1.0 or (self.rate and self.done == self.total)
        ):
            self.last_print = now
            line = f"\r{self.desc}: {self.done}/{self.total}"
            if self.rate:
                per_second = (self.done - self.first) / max(now - self.start, 1e-9)
                left = (self.total - self.done) / per_second if per_second > 0 else math.inf
                eta = "?" if math.isinf(left) else f"{left:.0f} s"
                line = (
                    f"\r{self.desc}: {self.done:,}/{self.total:,} {self.unit}s, "
                    f"{per_second:,.0f} {self.unit}s/s, {eta} left"
                )
            print(line, end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar:
            self.bar.close()
        elif self.bar is False and self.last_print:
            print(file=sys.stderr)
