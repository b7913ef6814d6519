"""``suite/data.py`` (``read_suite``, ``SuiteData``) and ``io/suite.py``
(``read_suite_manifest``): a suite read from one long table in any format the package
reads, gzip included, with its columns renamed, reference rows and log-likelihood tables;
from a manifest of harness runs; and one-line errors for tables that do not fit."""

from __future__ import annotations

import csv
import gzip
import math

import numpy as np
import pytest
import truescore_fast as tf
from truescore_fast.suite.data import SuiteData, read_suite

ROWS = [
    # model, benchmark, parent, form, correct
    ("a", "b1", "p1", "public", 1),
    ("a", "b1", "p1", "fresh1", 0),
    ("a", "b1", "p1", "fresh2", 1),
    ("a", "b1", "p2", "public", 0),
    ("a", "b1", "p2", "fresh1", 0),
    ("a", "b1", "p2", "fresh2", 1),
    ("a", "b1", "p3", "public", 1),  # a public form without fresh forms
    ("a", "b1", "r1", "reference", 0.5),
    ("a", "b1", "r2", "reference", 1),
    ("b", "b1", "p1", "public", 0),
    ("b", "b1", "p1", "fresh2", 1),
    ("b", "b1", "p1", "fresh1", 1),
    ("b", "b1", "p2", "public", 1),
    ("b", "b1", "p2", "fresh1", 0),
    ("b", "b1", "p2", "fresh2", 0),
    ("a", "b2", "q1", "reference", 1),  # a pair with reference rows only
]
HEADER = ("model", "benchmark", "parent", "form", "correct")


def write(path, rows, header=HEADER, opener=open):
    with opener(path, "wt", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_a_long_table_is_read_pair_by_pair(tmp_path):
    data = read_suite(write(tmp_path / "suite.csv", ROWS))
    assert data.models == ("a", "b") and data.benchmarks == ("b1", "b2")
    a = data.pair("a", "b1")
    assert a.parents == ("p1", "p2", "p3") and a.public.tolist() == [1, 0, 1]
    assert a.fresh_parents == ("p1", "p2") and a.fresh_forms == ("fresh1", "fresh2")
    assert a.matched_public.tolist() == [1, 0]
    assert a.fresh.tolist() == [[0, 1], [0, 1]]
    assert a.reference_parents == ("r1", "r2") and a.reference.tolist() == [0.5, 1.0]
    b = data.pair("b", "b1")  # forms listed in another order: matched by name
    assert b.fresh.tolist() == [[1, 1], [0, 0]]
    only_reference = data.pair("a", "b2")
    assert only_reference.parents == () and not only_reference.has_fresh
    assert only_reference.reference.tolist() == [1.0]
    assert data.pair("b", "b2") is None


def test_gzip_renamed_columns_and_mappings_read_the_same(tmp_path):
    plain = read_suite(write(tmp_path / "suite.csv", ROWS))
    header = ("system", "task", "item", "variant", "score")
    zipped = write(tmp_path / "suite.csv.gz", ROWS, header, opener=gzip.open)
    names = dict(zip(HEADER, header, strict=True))
    renamed = read_suite(zipped, columns=names)
    columns = {h: [r[k] for r in ROWS] for k, h in enumerate(HEADER)}
    mapping = read_suite(columns)
    for other in (renamed, mapping):
        assert len(other.pairs) == len(plain.pairs)
        for p, o in zip(plain.pairs, other.pairs, strict=True):
            assert (p.model, p.benchmark, p.parents) == (o.model, o.benchmark, o.parents)
            assert np.array_equal(p.fresh, o.fresh) and np.array_equal(p.reference, o.reference)


def test_log_likelihood_tables_are_read_per_pair(tmp_path):
    table = tmp_path / "ll.csv"
    write(
        table,
        [
            ("s1", "canonical", -10.0),
            ("s1", "shuffled", -12.0),
            ("s1", "x", -9.0),
            ("s2", "shuffled", -3.0),
            ("s2", "canonical", -1.0),
        ],
        header=("shard", "kind", "loglik"),
    )
    data = read_suite(write(tmp_path / "suite.csv", ROWS), logliks={("a", "b1"): table})
    order = data.pair("a", "b1").order
    assert order.shards == ("s1", "s2")
    assert order.canonical.tolist() == [-10.0, -1.0]
    assert [s.tolist() for s in order.shuffled] == [[-12.0, -9.0], [-3.0]]
    assert data.pair("b", "b1").order is None
    with pytest.raises(ValueError, match="no scores for model 'c'"):
        read_suite(ROWS_TABLE(tmp_path), logliks={("c", "b1"): table})
    bad = write(tmp_path / "bad.csv", [("canonical", 1.0)], header=("kind", "loglik"))
    with pytest.raises(ValueError, match="at least one shuffled"):
        read_suite(ROWS_TABLE(tmp_path), logliks={("a", "b1"): bad})


def ROWS_TABLE(tmp_path):  # noqa: N802 - the table of ROWS
    return write(tmp_path / "rows.csv", ROWS)


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda r: [*r, ("a", "b1", "p1", "public", 1)], "given twice"),
        (lambda r: [*r, ("a", "b1", "p9", "fresh1", 1)], "no public form"),
        (
            lambda r: [*r, ("a", "b1", "p9", "public", 1), ("a", "b1", "p9", "fresh3", 1)],
            "same ones",
        ),
        (lambda r: [*r, ("a", "b1", "p9", "public", math.nan)], "correct must lie"),
        (lambda r: [*r, ("a", "b1", "p9", "public", 2)], "correct must lie"),
        (lambda r: [*r, ("a", "b1", "p9", "public", "yes")], "correct must be a number"),
        (lambda r: [*r, ("a", "", "p9", "public", 1)], "empty model"),
        (lambda r: [*r, ("a", "b1", "r1", "reference", 1)], "given twice"),
    ],
)
def test_tables_that_do_not_fit_are_refused(tmp_path, change, match):
    with pytest.raises(ValueError, match=match):
        read_suite(write(tmp_path / "s.csv", change(list(ROWS))))


def test_a_missing_label_in_a_frame_is_empty_not_nan():
    # pandas fills a missing cell of a column of strings with NaN (an object column): that
    # is no model named "nan"
    columns = {name: np.array([row[k] for row in ROWS], dtype=object)
               for k, name in enumerate(HEADER)}  # fmt: skip
    for missing in (math.nan, np.float32("nan")):
        columns["model"][-1] = missing
        with pytest.raises(ValueError, match=f"source row {len(ROWS)}: empty model"):
            read_suite(columns)


def test_bad_arguments_are_refused(tmp_path):
    table = ROWS_TABLE(tmp_path)
    with pytest.raises(ValueError, match="missing the column"):
        read_suite(write(tmp_path / "x.csv", [r[:4] for r in ROWS], HEADER[:4]))
    manifest = write(
        tmp_path / "m.csv", [("a", "b", "public", "x.csv")], ("model", "benchmark", "form", "path")
    )
    with pytest.raises(ValueError, match="read_suite_manifest"):
        read_suite(manifest)
    with pytest.raises(ValueError, match="columns: unknown role"):
        read_suite(table, columns={"score": "correct"})
    with pytest.raises(ValueError, match="columns must name 5 different"):
        read_suite(table, columns={"model": "benchmark"})
    with pytest.raises(ValueError, match="columns must map"):
        read_suite(table, columns=["model"])
    with pytest.raises(ValueError, match="public_form and reference_form"):
        read_suite(table, reference_form="public")
    with pytest.raises(ValueError, match="logliks keys"):
        read_suite(table, logliks={"a": "x.csv"})
    with pytest.raises(ValueError, match="source"):
        read_suite(42)
    with pytest.raises(FileNotFoundError):
        read_suite(tmp_path / "missing.csv")


def test_a_manifest_of_per_run_tables_reads_as_the_long_table(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    manifest = []
    for model, bench in (("a", "b1"), ("b", "b1")):
        for form in ("public", "fresh1", "fresh2"):
            rows = [(r[2], r[4]) for r in ROWS if r[:2] == (model, bench) and r[3] == form]
            if model == "a" and form == "fresh1":
                rows = rows[::-1]  # the order of a run does not matter
            write(runs / f"{model}-{form}.csv", rows, header=("id", "acc"))
            manifest.append((model, bench, form, f"runs/{model}-{form}.csv"))
    write(runs / "a-ref.csv", [("r1", 0.5), ("r2", 1)], header=("id", "acc"))
    manifest.append(("a", "b1", "reference", "runs/a-ref.csv"))
    path = write(
        tmp_path / "manifest.csv", manifest, header=("model", "benchmark", "form", "path")
    )
    got = tf.read_suite_manifest(path, match_key="id", metric="acc")
    want = read_suite(write(tmp_path / "b1.csv", [r for r in ROWS if r[1] == "b1"]))
    assert isinstance(got, SuiteData)
    for model in ("a", "b"):
        g, w = got.pair(model, "b1"), want.pair(model, "b1")
        assert g.parents == w.parents and np.array_equal(g.public, w.public)
        assert g.fresh_parents == w.fresh_parents and np.array_equal(g.fresh, w.fresh)
        assert np.array_equal(g.reference, w.reference)


def test_a_manifest_that_does_not_fit_is_refused(tmp_path):
    write(tmp_path / "pub.csv", [("x1", 1), ("x2", 0)], header=("id", "acc"))
    write(tmp_path / "fr.csv", [("x1", 1), ("x3", 0)], header=("id", "acc"))
    header = ("model", "benchmark", "form", "path")
    path = write(
        tmp_path / "m.csv",
        [("a", "b", "public", "pub.csv"), ("a", "b", "fresh1", "fr.csv")],
        header,
    )
    with pytest.raises(ValueError, match="the public run"):
        tf.read_suite_manifest(path, match_key="id", metric="acc")
    twice = write(
        tmp_path / "m2.csv",
        [("a", "b", "public", "pub.csv"), ("a", "b", "public", "fr.csv")],
        header,
    )
    with pytest.raises(ValueError, match="given twice"):
        tf.read_suite_manifest(twice, match_key="id", metric="acc")
    with pytest.raises(ValueError, match="missing the column"):
        tf.read_suite_manifest(
            write(tmp_path / "m3.csv", [("a", "b", "x")], header[:3]), match_key="id"
        )
    with pytest.raises(ValueError, match="match_key"):
        tf.read_suite_manifest(path, match_key="")
    missing = write(
        tmp_path / "m4.csv",
        [("a", "b", "public", "pub.csv"), ("a", "b", "fresh1", "nothing.csv")],
        header,
    )
    with pytest.raises(FileNotFoundError, match="^manifest row 2: .*nothing.csv"):
        tf.read_suite_manifest(missing, match_key="id")
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    unreadable = write(tmp_path / "m5.csv", [("a", "b", "public", "bad.jsonl")], header)
    with pytest.raises(ValueError, match="^manifest row 1: .*bad.jsonl"):
        tf.read_suite_manifest(unreadable, match_key="id")


def _same_suite(fast, slow):
    assert len(fast.pairs) == len(slow.pairs)
    for a, b in zip(fast.pairs, slow.pairs, strict=True):
        for name in ("model", "benchmark", "parents", "fresh_parents", "fresh_forms",
                     "reference_parents"):  # fmt: skip
            assert getattr(a, name) == getattr(b, name), name
        for name in ("public", "matched_public", "fresh", "reference"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype == np.float64 and x.shape == y.shape, name
            assert np.array_equal(x, y), name


@pytest.mark.parametrize("kind", ["csv", "csv.gz", "tsv", "parquet", "bom", "shuffled", "big"])
def test_the_columnar_reader_reads_what_the_row_reader_reads(tmp_path, kind, monkeypatch):
    """pyarrow's reader and NumPy's grouping (the fast path for CSV, TSV and Parquet
    files) give the SuiteData the row-by-row reader gives, pair order, parent order,
    fresh-form order and reference-only pairs included."""
    pytest.importorskip("pyarrow")
    from truescore_fast.suite import data as suite_data

    rows = list(ROWS)
    if kind == "shuffled":  # rows in any order: pairs and parents by first appearance
        rows = [rows[i] for i in np.random.default_rng(3).permutation(len(rows))]
    if kind == "big":
        data = tf.simulate_suite(models=7, benchmarks=3, parents=50, fresh_forms=2, seed=1)
        rows = [(p.model, p.benchmark, parent, form, value)
                for p in data.pairs for i, parent in enumerate(p.parents)
                for form, value in [("public", p.public[i]),
                                    *zip(p.fresh_forms, p.fresh[i], strict=True)]]  # fmt: skip
    if kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = tmp_path / "s.parquet"
        schema = pa.schema([(h, pa.string()) for h in HEADER[:4]] + [("correct", pa.float64())])
        columns = {h: [r[k] for r in rows] for k, h in enumerate(HEADER)}
        pq.write_table(pa.table(columns, schema=schema), path)
    elif kind == "tsv":
        path = tmp_path / "s.tsv"
        path.write_text("\n".join("\t".join(map(str, r)) for r in [HEADER, *rows]) + "\n")
    elif kind == "bom":
        path = write(tmp_path / "s.csv", rows)
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    else:
        opener = gzip.open if kind == "csv.gz" else open
        path = write(tmp_path / ("s.csv.gz" if kind == "csv.gz" else "s.csv"), rows, opener=opener)
    calls = []
    real = suite_data._read_coded
    monkeypatch.setattr(suite_data, "_read_coded", lambda *a: calls.append(1) or real(*a))
    fast = read_suite(path)
    assert calls and real(path, suite_data._column_names(None), "public", "reference")
    monkeypatch.setattr(suite_data, "_read_coded", lambda *a: None)
    _same_suite(fast, read_suite(path))


@pytest.mark.parametrize(
    "change",
    [
        lambda r: [*r, ("a", "b1", "p1", "public", 1)],  # a duplicate
        lambda r: [*r, ("a", "b1", "p9", "fresh1", 1)],  # no public form
        lambda r: [*r, ("a ", "b1", "p9", "public", 1)],  # a label with a space
        lambda r: [*r, ("a", "b1", "p9", "public", 2)],  # out of [0, 1]
        lambda r: [*r, ("a", "b1", "p9", "public", "yes")],  # not a number
    ],
)
def test_the_columnar_reader_leaves_what_it_does_not_accept_to_the_row_reader(tmp_path, change):
    """Anything the fast path does not take as it is goes to the row-by-row reader (which
    names the row and what is wrong, or, for a label with spaces, strips it)."""
    pytest.importorskip("pyarrow")
    from truescore_fast.suite import data as suite_data

    path = write(tmp_path / "s.csv", change(list(ROWS)))
    assert (
        suite_data._read_coded(path, suite_data._column_names(None), "public", "reference") is None
    )
    assert (
        suite_data._read_coded(
            write(tmp_path / "ok.csv", ROWS), suite_data._column_names(None), "public", "reference"
        )
        is not None
    )


def test_the_columnar_reader_leaves_names_that_look_alike_to_the_row_reader(tmp_path):
    """Two model names equal once NFKC-normalised with white space folded (the
    NameSpellings rule) are refused, naming both, whichever reader sees the file."""
    pytest.importorskip("pyarrow")
    from truescore_fast.suite import data as suite_data

    rows = [*ROWS, ("model a", "b1", "p1", "public", 1), ("model\u00a0a", "b1", "p2", "public", 1)]
    path = write(tmp_path / "s.csv", rows)
    assert (
        suite_data._read_coded(path, suite_data._column_names(None), "public", "reference") is None
    )
    with pytest.raises(ValueError, match="look the same"):
        read_suite(path)


def test_numeric_columns_are_read_from_their_buffers():
    """The fast reader's numbers come from the arrays' buffers (pyarrow's to_numpy would
    import pandas): equal to pyarrow's own values for every numeric type, for sliced
    chunks (an offset into the buffer) and for several chunks."""
    pa = pytest.importorskip("pyarrow")
    from truescore_fast.suite.data import _numbers

    values = [0, 1, 7, 3, 120, 9]
    for kind in (pa.int8(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.float32(),
                 pa.float64()):  # fmt: skip
        whole = pa.array(values, type=kind)
        chunks = [whole.slice(1, 3), whole.slice(4)]
        got = _numbers(chunks)
        want = np.concatenate([c.to_numpy(zero_copy_only=False) for c in chunks])
        assert got.dtype == want.dtype and np.array_equal(got, want), kind
    assert np.array_equal(_numbers([pa.array([0.5, None])])[:1], [0.5])  # nulls: pyarrow's


def test_the_suite_command_imports_neither_pandas_nor_scipy_special(tmp_path):
    """Reading a CSV with pyarrow and running every test of the shipped example loads
    neither pandas (~0.2 s) nor scipy.special (~0.2 s): neither is needed there."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from truescore_fast.cli import main\n"
        "main(['suite', 'examples/suite/suite_example.csv.gz', '--no-progress'])\n"
        "print(sorted(m for m in ('pandas', 'scipy.special') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, timeout=300)  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-500:] + done.stderr[-500:]
