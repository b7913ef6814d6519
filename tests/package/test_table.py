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


def wide_table():
    rng = np.random.default_rng(0)
    columns = {"setting": np.array(["a", "b", "c"]), "n": np.array([50, 200, 400])}
    for m in ("hoeffding", "bernstein", "wald", "hoeffding_serfling", "betting"):
        columns[f"{m} coverage"] = rng.random(3)
        columns[f"{m} coverage_se"] = rng.random(3) / 100
    return StudyTable(title="A wide study " * 12, columns=columns, notes=["a note " * 30])


def test_summary_fits_a_width_by_leaving_out_standard_errors_then_wrapping():
    t = wide_table()
    full = t.summary()
    assert full == str(t) and max(len(line) for line in full.splitlines()) > 100
    narrow = t.summary(100)
    lines = narrow.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "coverage_se" not in narrow.split("standard errors left out")[0]
    largest = max(float(t[n].max()) for n in t.columns if n.endswith("_se"))
    assert f"the largest is {largest:.4f}" in narrow
    # the note says how to see them: the library's call, or what the caller names
    assert "print the table with summary(width=None) to see them" in " ".join(narrow.split())
    assert "with --wide to see" in " ".join(t.summary(100, wider="--wide").split())
    headers = [line for line in lines if line.split()[:2] == ["setting", "n"]]
    assert len(headers) >= 2  # wrapped into blocks, each repeating the key columns
    shown = [w for line in headers for w in line.split()[2:] if w != "coverage"]
    assert sorted(shown) == sorted(
        ["hoeffding", "bernstein", "wald", "hoeffding_serfling", "betting"]
    )
    for value in t["betting coverage"]:
        assert f"{value:.4f}" in narrow  # no number is shortened


def test_summary_width_keeps_a_table_that_fits_unchanged():
    assert table().summary(100) == table().summary()


def test_explicit_keys_are_repeated_and_not_in_to_dict():
    t = StudyTable(
        title="t",
        columns={"x": np.array([0.5]), **{f"c{i}" * 8: np.array([1.0]) for i in range(12)}},
        keys=("x",),
    )
    blocks = [line for line in t.summary(60).splitlines() if line.lstrip().startswith("x ")]
    assert len(blocks) >= 2
    assert "keys" not in t.to_dict()


@pytest.mark.parametrize("width", [39, 0, 100.0, True, "100"])
def test_summary_width_is_checked(width):
    with pytest.raises(ValueError, match="width"):
        table().summary(width)
