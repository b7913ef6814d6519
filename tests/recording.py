"""``Recorder``: the study engine's tasks as they run, for the checkpoint tests of
tests/studies/test_engine.py and tests/studies/test_sequential.py (which also share the
``one_task_per_call`` fixture of tests/studies/conftest.py)."""

from truescore_fast.studies import _engine


class Recorder:
    """Wraps Cell.run: records the tasks run per cell, raises KeyboardInterrupt (as Ctrl-C
    would) once ``stop_after`` calls have returned."""

    def __init__(self, monkeypatch, stop_after=None):
        self.calls: list[tuple[int, int, int]] = []
        self.stop_after = stop_after
        original = _engine.Cell.run
        recorder = self

        def run(cell, begin, end, n_threads):
            if recorder.stop_after is not None and len(recorder.calls) >= recorder.stop_after:
                raise KeyboardInterrupt
            recorder.calls.append((cell.task_offset, begin, end))
            return original(cell, begin, end, n_threads)

        monkeypatch.setattr(_engine.Cell, "run", run)

    def tasks(self):
        """(cell, task) of every task run: a calibration cell c's tasks are streams
        c x 2**32 + t; the sequential studies number their tasks' streams from 0."""
        return sorted(
            (offset // 2**32, offset % 2**32 + t)
            for offset, begin, end in self.calls
            for t in range(begin, end)
        )
