"""Fixtures shared by the study tests."""

import pytest
from truescore_fast.studies import _engine


@pytest.fixture
def one_task_per_call(monkeypatch):
    monkeypatch.setattr(_engine, "_CHUNK_SECONDS", 1e-9)  # every call runs one task
    monkeypatch.setattr(_engine, "_CHECKPOINT_SECONDS", 0.0)  # save after every call
