"""StudyTable: equal columns, printing, plain-Python and pandas conversion."""

from __future__ import annotations

import json

import numpy as np
import pytest
from truescore_fast._table import StudyTable


def table():
    return StudyTable(
        title="Coverage",
        columns={"n": np.array([10, 200]), "coverage": np.array([0.95, np.nan])},
        notes=["seed 0"],
        meta={"seed": np.int64(0)},
    )


def test_print_and_dict():
    t = table()
    text = str(t)
    assert "Coverage" in text and "0.9500" in text and "-" in text and "seed 0" in text
    d = t.to_dict()
    assert json.loads(json.dumps(d))["columns"]["n"] == [10, 200]
    assert d["meta"]["seed"] == 0 and len(t) == 2
    np.testing.assert_array_equal(t["n"], [10, 200])


def test_unequal_columns_rejected():
    with pytest.raises(ValueError, match="equal lengths"):
        StudyTable(title="x", columns={"a": np.zeros(2), "b": np.zeros(3)})


def test_to_frame_when_pandas_present():
    pd = pytest.importorskip("pandas")
    frame = table().to_frame()
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == ["n", "coverage"]
