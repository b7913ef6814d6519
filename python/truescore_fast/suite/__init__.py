"""Auditing a whole evaluation suite: every model × benchmark, every applicable test, the
error rate controlled across the suite, and a report to look at."""

from truescore_fast.suite.report import plot_heatmap, write_report

__all__ = ["plot_heatmap", "write_report"]
