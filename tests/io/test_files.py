"""Input files read by ``_files.py``: every table format (CSV, TSV, JSON, JSON lines,
Parquet, gzip) gives the same audit table, standard input recognised by its content,
column flags, line numbers in errors, damaged gzip and gzip bombs refused in one line."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import truescore_fast as tf
from commands import assert_one_line_error, run_cli, run_cli_process
from truescore_fast._files import read_rows, sniff_format
from truescore_fast.cli import ExitCode

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


EXAMPLE = EXAMPLES / "audit_example.csv"


CONTROL = EXAMPLES / "audit_control.csv"


def example_rows():
    with open(EXAMPLE, newline="") as fh:
        return list(csv.DictReader(fh))


def write_as(path: Path, rows, kind: str) -> Path:
    """The rows written by the standard library / pyarrow, not by the code under test."""
    if kind in ("csv", "tsv"):
        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(
                fh, fieldnames=list(rows[0]), delimiter="\t" if kind == "tsv" else ","
            )
            writer.writeheader()
            writer.writerows(rows)
    elif kind == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns = {name: [r[name] for r in rows] for name in rows[0]}
        pq.write_table(pa.table(columns), path)
    return path


def typed(rows):
    """The example's rows with correctness as numbers, as JSON or Parquet would hold it."""
    return [{**r, "correct": float(r["correct"])} for r in rows]


@pytest.mark.parametrize(
    "suffix, kind",
    [(".tsv", "tsv"), (".tab", "tsv"), (".jsonl", "jsonl"), (".parquet", "parquet")],
)
def test_every_table_format_gives_the_same_audit_table(tmp_path, suffix, kind):
    rows = typed(example_rows()) if kind in ("jsonl", "parquet") else example_rows()
    path = write_as(tmp_path / f"audit{suffix}", rows, kind)
    expected = tf.read_audit_table(EXAMPLE)
    got = tf.read_audit_table(path)
    assert list(got) == list(expected)
    for model in expected:
        assert got[model].parents == expected[model].parents
        np.testing.assert_array_equal(got[model].public, expected[model].public)
        np.testing.assert_array_equal(got[model].fresh, expected[model].fresh)


def test_parquet_rows_keep_their_types(tmp_path):
    rows = [{"parent": "a", "n": 3, "x": 0.5, "flag": True, "none": None}]
    path = write_as(tmp_path / "t.parquet", rows, "parquet")
    assert read_rows(path) == rows
    assert read_rows(write_as(tmp_path / "t.tsv", rows, "tsv")) == [
        {"parent": "a", "n": "3", "x": "0.5", "flag": "True", "none": ""}
    ]


@pytest.mark.parametrize("kind", ["csv", "tsv", "jsonl", "parquet"])
def test_standard_input_is_recognised_by_its_content(tmp_path, kind):
    rows = typed(example_rows()) if kind in ("jsonl", "parquet") else example_rows()
    data = write_as(tmp_path / f"t.{kind}", rows, kind).read_bytes()
    assert sniff_format(data) == {"jsonl": "json"}.get(kind, kind)
    args = ["--control", CONTROL, "--population-size", "1000", "--radius", "0.02", "--json"]
    code_file, out_file, _ = run_cli("audit", EXAMPLE, *args)
    code, out, err = run_cli("audit", "-", *args, stdin=data)
    assert code == code_file == ExitCode.FINDING, err
    assert json.loads(out) == json.loads(out_file)


def test_read_rows_reads_a_text_stdin_without_a_buffer(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\tb\n1\t2\n"))
    assert read_rows("-") == [{"a": "1", "b": "2"}]
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(ValueError, match="standard input has no rows"):
        read_rows("-")


def test_contamination_reads_standard_input_too():
    data = (EXAMPLES / "contamination_sharded.csv").read_bytes()
    code, out, err = run_cli("contamination", "-", "--shard-column", "shard", stdin=data)
    assert code == ExitCode.FINDING, err
    assert "pooled p = 0.002748" in out  # the README's figure, as from the file


# ------------------------------------------------------------------------ column mapping

RENAMED = {"model": "system", "parent": "item", "form": "variant", "correct": "score"}


def renamed_rows():
    out = []
    for row in example_rows():
        new = {RENAMED[k]: v for k, v in row.items()}
        new["variant"] = "original" if new["variant"] == "public" else new["variant"]
        out.append(new)
    return out


def read_renamed(path):
    return tf.read_audit_table(
        path,
        parent_column="item",
        form_column="variant",
        correct_column="score",
        model_column="system",
        public_form="original",
    )


def test_column_flags_read_a_table_with_other_names(tmp_path):
    path = write_as(tmp_path / "renamed.csv", renamed_rows(), "csv")
    args = ["--population-size", "1000", "--radius", "0.02", "--json"]
    flags = [f"--{k}-column" for k in RENAMED]
    mapping = [a for flag, name in zip(flags, RENAMED.values(), strict=True) for a in (flag, name)]
    code, out, err = run_cli("audit", path, *mapping, "--public-form", "original", *args)
    code_ref, out_ref, _ = run_cli("audit", EXAMPLE, *args)
    assert code == code_ref == ExitCode.FINDING, err
    assert json.loads(out) == json.loads(out_ref)
    # without the flags the columns are missing: named, with what the table has
    code, _, err = run_cli("audit", path)
    assert_one_line_error(code, err, "missing the column 'parent'", "item")
    # without --public-form no parent has a public form
    code, _, err = run_cli("audit", path, *mapping)
    assert_one_line_error(code, err, "missing its public form", "variant = 'public'")


def test_read_audit_table_column_arguments(tmp_path):
    path = write_as(tmp_path / "renamed.csv", renamed_rows(), "csv")
    got = read_renamed(path)
    expected = tf.read_audit_table(EXAMPLE)
    for model in expected:
        np.testing.assert_array_equal(got[model].fresh, expected[model].fresh)
    with pytest.raises(ValueError, match="parent_column must be a non-empty string"):
        tf.read_audit_table(path, parent_column="")
    with pytest.raises(ValueError, match="four different columns"):
        tf.read_audit_table(path, parent_column="item", form_column="item")
    with pytest.raises(ValueError, match="row 1: score must be a number"):
        tf.read_audit_table(
            io.StringIO("item,variant,score\na,public,x\n"),
            parent_column="item",
            form_column="variant",
            correct_column="score",
        )


def test_a_table_read_with_columns_can_be_audited_directly(tmp_path):
    path = write_as(tmp_path / "renamed.csv", renamed_rows(), "csv")
    data = read_renamed(path)
    got = tf.matched_form_audits(data, population_size=1000, seed=2)
    expected = tf.matched_form_audits(EXAMPLE, population_size=1000, seed=2)
    assert {m: r.to_dict() for m, r in got.items()} == {
        m: r.to_dict() for m, r in expected.items()
    }


# ------------------------------------------------------------------------------- errors


def test_parquet_without_pyarrow_is_one_line(tmp_path):
    path = write_as(tmp_path / "t.parquet", typed(example_rows()), "parquet")
    pre = "import sys; sys.modules['pyarrow'] = None; sys.modules['pyarrow.parquet'] = None; "
    code, _, err = run_cli_process("audit", path, pre=pre)  # pyarrow gone before start-up
    assert_one_line_error(code, err, "Parquet", "pip install 'truescore-fast[parquet]'")


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("bad.parquet", b"PAR1 not really", ["bad.parquet", "not a readable Parquet file"]),
        ("t.xlsx", b"x", ["unsupported file type '.xlsx'", ".parquet", "standard input"]),
        ("t.tsv", b"a\tb\n", ["t.tsv has no rows"]),
        ("big.tsv", b"a\tb\n1\t" + b"2" * 140_000 + b"\n", ["big.tsv", "line 2"]),
        ("latin.tsv", "a\tb\n\xe9\t1\n".encode("latin-1"), ["latin.tsv", "not UTF-8"]),
    ],
    # short ids: pytest puts the id in the environment of the subprocess
    ids=["bad-parquet", "xlsx", "empty-tsv", "big-field", "latin-1"],
)
def test_bad_tables_are_named(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_bytes(content)
    code, _, err = run_cli("audit", path)
    assert_one_line_error(code, err, *words)


def test_standard_input_is_read_once_and_a_zip_is_not_a_table(tmp_path):
    code, _, err = run_cli("audit", "-", "--control", "-", stdin=b"")
    assert_one_line_error(code, err, "standard input", "once")
    code, _, err = run_cli("audit", "-", stdin=b"PK\x03\x04rest")
    assert_one_line_error(code, err, "standard input is a zip archive, not a table")
    code, _, err = run_cli("audit", "-", stdin=b"")
    assert_one_line_error(code, err, "standard input has no rows")


# ------------------------------------------------------------------------ gzip


@pytest.mark.parametrize("kind", ["csv", "tsv", "jsonl", "parquet"])
def test_gzipped_tables_read_as_the_plain_ones(tmp_path, kind):
    import gzip

    rows = typed(example_rows()) if kind in ("jsonl", "parquet") else example_rows()
    plain = write_as(tmp_path / f"audit.{kind}", rows, kind)
    packed = tmp_path / f"audit.{kind}.GZ"  # the suffix is looked through in any case
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert read_rows(packed) == read_rows(plain)
    # standard input is recognised by the gzip magic bytes, then by its content
    args = ["--control", CONTROL, "--population-size", "1000", "--radius", "0.02", "--json"]
    _, out_file, _ = run_cli("audit", plain, *args)
    code, out, err = run_cli("audit", "-", *args, stdin=packed.read_bytes())
    assert code == ExitCode.FINDING, err
    assert json.loads(out) == json.loads(out_file)


def test_gzip_members_back_to_back_are_one_file(tmp_path):
    import gzip

    text = (EXAMPLE.read_text()).splitlines(keepends=True)
    half = len(text) // 2
    path = tmp_path / "two_members.csv.gz"
    path.write_bytes(
        gzip.compress("".join(text[:half]).encode()) + gzip.compress("".join(text[half:]).encode())
    )
    assert read_rows(path) == read_rows(EXAMPLE)


def test_zero_bytes_after_the_gzip_stream_are_padding(tmp_path):
    # gzip -d and Python's gzip module read a stream padded with zero bytes (as a tape or
    # a block device leaves it); so do we. Anything else after it is refused (below).
    import gzip

    path = tmp_path / "padded.csv.gz"
    path.write_bytes(gzip.compress(EXAMPLE.read_bytes()) + bytes(512))
    assert gzip.decompress(path.read_bytes()) == EXAMPLE.read_bytes()
    assert read_rows(path) == read_rows(EXAMPLE)


@pytest.mark.parametrize(
    "damage, words",
    [
        (lambda b: b[: len(b) // 2], "gzip stream is truncated"),
        (lambda b: b[:20] + bytes(40) + b[60:], "not a readable gzip stream"),
        (lambda b: b + b"trailing", "data after the end of the gzip stream"),
        (lambda b: b + bytes(8) + b"x", "data after the end of the gzip stream"),
    ],
)
def test_damaged_gzip_is_one_line_naming_the_file(tmp_path, damage, words):
    import gzip

    path = tmp_path / "bad.csv.gz"
    path.write_bytes(damage(gzip.compress(EXAMPLE.read_bytes())))
    with pytest.raises(ValueError, match=words) as info:
        read_rows(path)
    assert str(path) in str(info.value)
    code, _, err = run_cli("audit", path)
    assert_one_line_error(code, err, words)


def test_a_gzip_bomb_is_refused_before_it_fills_memory(tmp_path):
    """A 64 MiB stream of zeros packed to ~64 kB, read under an address-space limit
    (``ulimit -v``) too small for it: refused with the memory message, in a child so the
    limit does not bind the suite."""
    import gzip

    path = tmp_path / "bomb.csv.gz"
    path.write_bytes(gzip.compress(b"a\n" + bytes(64 << 20), compresslevel=9))
    assert path.stat().st_size < 1 << 20
    code = (
        "import resource, sys\n"
        "from truescore_fast._files import read_rows\n"
        "import truescore_fast._validation as v\n"
        "v.memory_limit = lambda: 48 << 20\n"  # as if the machine had 48 MB
        "import truescore_fast._files as io_\n"
        "io_.memory_limit = v.memory_limit\n"
        f"try:\n    read_rows({str(path)!r})\n"
        "except MemoryError as e:\n    print(e); sys.exit(0)\n"
        "sys.exit(1)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "bomb.csv.gz (decompressed) needs" in proc.stdout
    assert "decompress it and split it" in proc.stdout


# --- JSON Lines: one line-splitting rule, the right line number ---------------------------


def _bad_line_error(tmp_path, text: str, name: str = "rows.jsonl") -> str:
    from truescore_fast._files import read_rows

    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    with pytest.raises(ValueError) as error:
        read_rows(path)
    return str(error.value)


def test_json_lines_errors_count_blank_lines_and_crlf(tmp_path) -> None:
    # line 1 blank, 2 a row, 3 blank, 4 a row, 5 a broken row
    text = '\n{"a": 1}\r\n\r\n{"a": 2}\r\n{"a": \r\n'
    assert "rows.jsonl line 5:" in _bad_line_error(tmp_path, text)


def test_json_lines_do_not_end_inside_a_string(tmp_path) -> None:
    # U+2028, U+0085 and U+000C-free strings are legal JSON; str.splitlines would split
    # at the first two and number the broken row 6 instead of 4
    text = '{"a": "x\u2028y"}\n{"a": "x\u0085y"}\n\n[1]\n'
    message = _bad_line_error(tmp_path, text)
    assert "rows.jsonl line 4:" in message and "JSON object" in message


def test_a_lone_carriage_return_ends_a_line_as_in_csv(tmp_path) -> None:
    assert "line 3:" in _bad_line_error(tmp_path, '{"a": 1}\r{"a": 2}\r{"a"\r')


def test_a_json_array_file_reports_lines_of_the_file_itself(tmp_path) -> None:
    # the leading blank lines are part of the file: the parser's line number counts them
    message = _bad_line_error(tmp_path, '\n\n[{"a": 1},\n {"a": }]\n', "rows.json")
    assert "line 4" in message


@pytest.mark.slow
def test_a_parquet_file_too_large_once_decompressed_is_refused_before_it_is_read(
    tmp_path, monkeypatch
):
    # 2 million equal strings (a few kB on disk, dictionary-encoded) on a machine said to
    # have 64 MiB (2 MiB of text): refused by the cells its row groups record
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from truescore_fast import _files

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"model": ["m" * 5] * 2_000_000}), path, compression="zstd")
    assert path.stat().st_size < 100_000
    monkeypatch.setattr(_files, "memory_limit", lambda: 64 << 20)
    with pytest.raises(MemoryError, match=rf"^{path} needs .* of memory"):
        read_rows(path)
    monkeypatch.setattr(_files, "memory_limit", lambda: 64 << 30)
    assert len(read_rows(path)) == 2_000_000
