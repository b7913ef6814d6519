"""Reading input files, shared by every reader of the package: the bytes of a file or of
standard input (gzip-compressed or not), its format sniffed from its content, its rows
as dicts (:func:`read_rows`: CSV, TSV, JSON Lines or Parquet) and JSON documents.
Not a public API: :func:`truescore_fast.read_audit_table` and
:func:`truescore_fast.read_harness_runs` are the public readers built on it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np

from truescore_fast._output import file_kind
from truescore_fast._validation import memory_error, memory_limit, one_line, optional_module
from truescore_fast.errors import ArgumentError

__all__ = [
    "STDIN",
    "Budget",
    "NotJsonError",
    "check_input_file",
    "decode_text",
    "parquet_rows",
    "parse_json",
    "read_input_bytes",
    "read_columns",
    "read_json_file",
    "read_rows",
    "run_budget",
    "sniff_format",
    "table_suffix",
    "text_rows",
]


def check_input_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a Path if it names a regular file; otherwise an error saying what it is.

    Raises:
        FileNotFoundError: nothing is there.
        ValueError: a directory, a FIFO, a device or a socket (reading a FIFO or a
            device could block for ever or never end).
    """
    file_path = Path(path)
    try:
        mode = file_path.stat().st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"no such file: {file_path}") from None
    if stat.S_ISREG(mode):
        return file_path
    what = file_kind(mode)
    raise ValueError(f"{file_path} is {what}, not a file: give the path of a regular file")


class NotJsonError(ValueError):
    """Text that is not a JSON document this package reads (the message says where)."""


def parse_json(text: str, where: str, **hooks: Any) -> Any:
    """``json.loads(text, **hooks)``, the one JSON parser of the package (tables, rows,
    disclosure records). Text that is not JSON, or that a hook refuses, or that is nested
    too deeply for the parser (about 1,000 levels: it recurses once per level) is a
    :class:`NotJsonError` starting with ``where``; never a ``RecursionError``."""
    try:
        return json.loads(text, **hooks)
    except RecursionError:
        raise NotJsonError(f"{where}: JSON nested too deeply to read") from None
    except ValueError as error:  # json.JSONDecodeError, or a hook's refusal
        raise NotJsonError(f"{where}: not valid JSON: {error}") from None


def read_json_file(path: str | os.PathLike[str], where: str | None = None, **hooks: Any) -> Any:
    """The JSON document in the file ``path`` (UTF-8, a byte-order mark skipped), parsed by
    :func:`parse_json`; messages start with ``where`` (default: the path).

    Raises:
        FileNotFoundError, ValueError: as :func:`check_input_file` (not a regular file).
        NotJsonError: not UTF-8, not JSON, or nested too deeply.
    """
    file_path = check_input_file(path)
    where = str(file_path) if where is None else where
    try:
        text = file_path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotJsonError(f"{where}: not UTF-8 text: {error}") from None
    return parse_json(text, where, **hooks)


STDIN = "-"
"""The name that reads standard input instead of a file (the convention of pandas, csv
tools and most command lines)."""

# suffix -> format; the formats read_rows reads
_TABLE_FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "json",
    ".ndjson": "json",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_PARQUET_MAGIC = b"PAR1"
_ZIP_MAGIC = b"PK\x03\x04"
_GZIP_MAGIC = b"\x1f\x8b"
_GUNZIP_PIECE = 1 << 24  # bytes decompressed at a time
# Memory the readers need per byte of a table's text, at most: the text, its decoded
# string, and the rows as Python strings, dicts and floats. A file whose (decompressed)
# text times this cannot fit in memory is refused before it is read or inflated: a small
# gzip file can expand to terabytes, and standard input can be endless.
_READ_FACTOR = 32  # measured: a 10**6-row CSV audit table (18.8 MB) peaks at 490 MB


def _text_limit() -> int:
    """Most bytes of text (decompressed) a reader accepts on this machine."""
    return (memory_limit() or 2**62) // _READ_FACTOR


def _too_large(where: str, nbytes: float, advice: str) -> MemoryError:
    return memory_error(where, nbytes * _READ_FACTOR, advice)


def check_text_size(where: str, nbytes: int, advice: str) -> None:
    """Refuse (``MemoryError`` naming ``where``) ``nbytes`` of text a reader would parse
    when, with what parsing it takes, it cannot fit in memory (the readers' one rule)."""
    if nbytes > _text_limit():
        raise _too_large(where, nbytes, advice)


class Budget:
    """The bytes one file may still decompress to, all its members together (the readers'
    one rule: text that, parsed, cannot fit in memory is refused). :meth:`take` is called
    for each piece as it is decompressed, so a file is refused while it expands, not after:
    a member's recorded size is no bound (a header can forge it), nor is one member's.
    Inside :func:`run_budget` each piece also counts towards the run's total."""

    def __init__(self, where: str, nbytes: int | None = None):
        self.where = where
        self.left = _text_limit() if nbytes is None else nbytes
        self.taken = 0

    def take(self, nbytes: int, member: str | None = None) -> None:
        """Count ``nbytes`` more (of ``member``, a label naming the file and the member,
        when the piece is one member's); ``SizeError`` (a ``MemoryError``) naming the file
        once its total is past the budget, and naming the file and the member once the
        run's total (:func:`run_budget`) is."""
        self.taken += nbytes
        if self.taken > self.left:
            raise _too_large(
                f"{self.where} (decompressed)", self.taken, "extract it and split it first"
            )
        _take_from_run(member or self.where, nbytes)


class _RunTotal:
    """The bytes every file of one run (one command line, one reader call over many
    files) has decompressed so far, and the most it may."""

    def __init__(self, nbytes: int | None):
        self.left = _text_limit() if nbytes is None else nbytes
        self.taken = 0


_RUN: ContextVar[_RunTotal | None] = ContextVar("truescore_fast_run_budget", default=None)


@contextmanager
def run_budget(nbytes: int | None = None, *, separate: bool = False) -> Iterator[None]:
    """Within this block every file decompressed (gzip streams, zip members) counts
    towards one total, the run's: ``nbytes`` (default: the readers' one rule, the text
    that could be held in memory, as for one file). A run of many files, each under its
    own budget, is refused (``SizeError`` naming the file, and the member, that crossed
    it) once together they have decompressed more, while they expand.

    The command line opens one block for the whole command; each public reader of many
    files opens one when called on its own. A block inside another shares the outer
    block's total, unless ``separate``: then its files have a total of their own for the
    block (the suite's manifest reads, scores and drops one model x benchmark's runs at a
    time, so only the runs of one pair are held together)."""
    if _RUN.get() is not None and not separate:
        yield
        return
    token = _RUN.set(_RunTotal(nbytes))
    try:
        yield
    finally:
        _RUN.reset(token)


def _take_from_run(where: str, nbytes: int) -> None:
    """Count ``nbytes`` decompressed from ``where`` towards the run's total, if a run is
    open; ``SizeError`` naming ``where`` once the total is past the run's budget."""
    run = _RUN.get()
    if run is None:
        return
    run.taken += nbytes
    if run.taken > run.left:
        raise _too_large(
            f"{where} (decompressed, with the files read before it in this run)",
            run.taken,
            "read fewer or smaller files at a time",
        )


def read_input_bytes(path: str | os.PathLike[str]) -> tuple[str, bytes]:
    """``(name for messages, content)`` of a regular file, or of standard input for ``-``.

    Gzip-compressed content (a ``.jsonl.gz`` harness log, a ``.csv.gz`` table, or gzip on
    standard input) is recognised by its magic bytes, not its name, and decompressed.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: not a regular file, no standard input to read, or a damaged or
            truncated gzip stream.
        MemoryError: (a ``SizeError``, also a ``ValueError``) the content, or the
            decompressed content, is more than the readers could hold in memory (about
            32 bytes per byte of text); refused before it is read or decompressed.
    """
    limit = _text_limit()
    if isinstance(path, str) and path == STDIN:
        stdin = sys.stdin
        if stdin is None:
            raise ValueError("'-' reads standard input, but there is none")
        buffer = getattr(stdin, "buffer", None)
        where = "standard input"
        if buffer is not None:
            data = buffer.read(limit + 1)
        else:
            data = stdin.read(limit + 1).encode("utf-8")
        if len(data) > limit:
            raise _too_large(where, len(data), "write it to a file in pieces, or split it")
    else:
        file_path = check_input_file(path)
        where = str(file_path)
        size = file_path.stat().st_size
        if size > limit:
            raise _too_large(where, size, "split it into smaller files")
        data = file_path.read_bytes()
    if data.startswith(_GZIP_MAGIC):
        data = _gunzip(data, where)
    return where, data


def _gunzip(data: bytes, where: str) -> bytes:
    """The decompressed content of the gzip stream(s) in ``data``, read in pieces so that a
    stream that expands past the memory this process can have is refused, not allocated
    (a small file can decompress to terabytes)."""
    limit = _text_limit()
    pieces: list[bytes] = []
    total = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)  # 31: gzip header and trailer
        while True:
            try:
                piece = inflater.decompress(rest, _GUNZIP_PIECE)
            except zlib.error as error:
                raise ValueError(f"{where}: not a readable gzip stream ({error})") from None
            total += len(piece)
            if total > limit:  # stop inflating: rows of this much text cannot be held
                raise _too_large(
                    f"{where} (decompressed)",
                    total,
                    "decompress it and split it into smaller files",
                )
            _take_from_run(where, len(piece))
            pieces.append(piece)
            rest = inflater.unconsumed_tail
            if inflater.eof or not (rest or piece):
                break
        if not inflater.eof:
            raise ValueError(f"{where}: the gzip stream is truncated")
        rest = inflater.unused_data  # gzip allows several members back to back
        if not rest.strip(b"\0"):  # and zero bytes after the last (tape padding)
            break
        if not rest.startswith(_GZIP_MAGIC):
            raise ValueError(f"{where}: data after the end of the gzip stream")
    return b"".join(pieces)


def table_suffix(path: str | os.PathLike[str]) -> str:
    """The lower-case suffix that names a file's format, looking through a trailing
    ``.gz`` (``runs.jsonl.gz`` -> ``.jsonl``); ``""`` for standard input."""
    if isinstance(path, str) and path == STDIN:
        return ""
    name = Path(path)
    if name.suffix.lower() == ".gz":
        name = name.with_suffix("")
    return name.suffix.lower()


def sniff_format(data: bytes) -> str:
    """The table format of ``data`` read without a file name (standard input): Parquet by
    its magic bytes, JSON (Lines) by a leading ``{`` or ``[``, TSV when the first line has
    more tabs than commas, else CSV. ``"zip"`` for a zip archive (an Inspect ``.eval``)."""
    if data.startswith(_PARQUET_MAGIC):
        return "parquet"
    if data.startswith(_ZIP_MAGIC):
        return "zip"
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"{", b"["):
        return "json"
    first = head.split(b"\n", 1)[0]
    return "tsv" if first.count(b"\t") > first.count(b",") else "csv"


def decode_text(data: bytes, where: str) -> str:
    """``data`` as UTF-8 text (a byte-order mark skipped), or a ValueError saying which byte
    is not UTF-8."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{where}: not UTF-8 text (byte {error.start} is {error.object[error.start]:#x}); "
            "save it as UTF-8"
        ) from None


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rows of a table as dicts: CSV (``.csv``), TSV (``.tsv``/``.tab``), JSON Lines
    (``.jsonl``/``.ndjson``/``.json``) or Parquet (``.parquet``/``.pq``, needs the
    ``parquet`` extra: pyarrow); ``-`` reads standard input, its format recognised from the
    content (Parquet's magic bytes, a leading ``{`` or ``[`` for JSON, tabs for TSV).

    A UTF-8 byte-order mark (Excel's "CSV UTF-8") is skipped. A ``.json`` file may also
    hold one JSON array of objects. CSV and TSV fields are strings; JSON and Parquet keep
    their types.

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: not a regular file, unknown suffix, an unparsable line or field (with
            its line number), a row that is not an object, or no rows.
        MissingExtraError: a Parquet file without pyarrow installed.
    """
    where, data, kind = _table_source(path)
    if kind == "parquet":
        rows = parquet_rows(data, where)
    else:
        rows = text_rows(decode_text(data, where), kind, where)
    if not rows:
        raise ValueError(f"{where} has no rows")
    return rows


def _table_source(path: str | os.PathLike[str]) -> tuple[str, bytes, str]:
    if isinstance(path, str) and path == STDIN:
        where, data = read_input_bytes(path)
        kind = sniff_format(data)
        if kind == "zip":
            raise ValueError(f"{where} is a zip archive, not a table")
        return where, data, kind
    suffix = table_suffix(path)
    kind = _TABLE_FORMATS.get(suffix, "")
    if not kind:
        check_input_file(path)  # a missing file is named before its suffix
        raise ValueError(
            f"unsupported file type {suffix!r}: use .csv, .tsv, .jsonl, .ndjson, .json or "
            ".parquet, each optionally gzipped (.csv.gz), or - for standard input"
        )
    where, data = read_input_bytes(path)
    return where, data, kind


def parquet_rows(data: bytes, where: str) -> list[dict[str, Any]]:
    pyarrow = optional_module(
        "pyarrow", requirement="pyarrow>=14", extra="parquet", purpose="reading Parquet files"
    )
    parquet = optional_module(
        "pyarrow.parquet", requirement="pyarrow>=14", extra="parquet", purpose="reading Parquet"
    )
    try:
        # the size its row groups say they decompress to, and at least 8 bytes a cell (a
        # dictionary- or run-length-encoded column holds millions of cells in a few bytes,
        # each a Python object once read), refused before any is read
        metadata = parquet.ParquetFile(pyarrow.BufferReader(data)).metadata
        row_groups = (metadata.row_group(i) for i in range(metadata.num_row_groups))
        size = max(sum(g.total_byte_size for g in row_groups), 8 * metadata.num_rows
                   * metadata.num_columns)  # fmt: skip
        check_text_size(where, size, "split it first")
        table = parquet.read_table(pyarrow.BufferReader(data))
    except (OSError, ValueError, pyarrow.ArrowException) as error:
        if isinstance(error, MemoryError):  # the SizeError above: as it is
            raise
        raise ValueError(f"{where}: not a readable Parquet file ({error})") from None
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def text_rows(text: str, kind: str, where: str) -> list[dict[str, Any]]:
    if kind in ("csv", "tsv"):
        reader = csv.DictReader(
            io.StringIO(text, newline=""), delimiter="\t" if kind == "tsv" else ","
        )
        try:
            return [dict(row) for row in reader]
        except csv.Error as error:
            # line_num counts the lines fully read: the bad row starts on the next one
            start = reader.line_num + 1
            raise ValueError(f"{where} row starting on line {start}: {error}") from None
    if text.lstrip().startswith("["):
        loaded = parse_json(text, where)
        if not isinstance(loaded, list):  # pragma: no cover - "[" starts an array
            raise ValueError(f"{where}: expected a JSON array of objects")
        for number, item in enumerate(loaded, start=1):
            if not isinstance(item, dict):
                raise ValueError(
                    f"{where} item {number}: expected a JSON object (one row); "
                    f"got {type(item).__name__}"
                )
        return list(loaded)
    # Lines end at "\n", "\r\n" or "\r" (as the csv reader counts them) and nowhere else:
    # str.splitlines would also split at U+2028, U+0085 or a form feed, which JSON allows
    # inside a string, and misnumber every later line; leading blank lines are counted.
    rows = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, start=1):
        if line.strip():
            item = parse_json(line, f"{where} line {number}")
            if not isinstance(item, dict):
                raise ValueError(
                    f"{where} line {number}: expected a JSON object (one row); "
                    f"got {type(item).__name__}"
                )
            rows.append(item)
    return rows


# ---------------------------------------------------------------------------- columns


def read_columns(source: Any, name: str, *, expected: str) -> dict[str, list[Any]]:
    """A table's columns (name -> values in row order) from a path (:func:`read_rows`), an
    open CSV text file or a mapping of columns (a pandas DataFrame works); ``name`` is the
    argument's name for messages, ``expected`` the columns an empty table should have had.
    """
    if isinstance(source, (str, os.PathLike)):
        try:
            return _columns_from_rows(read_rows(source), str(source), expected)
        except ValueError as error:  # an unknown suffix says nothing of which argument
            if str(error).startswith("unsupported file type"):
                raise ArgumentError(name, f"{name}: {error}") from None
            raise
    if isinstance(source, io.IOBase) or hasattr(source, "read"):
        return _columns_from_rows(list(csv.DictReader(source)), name, expected)
    if isinstance(source, Mapping) or hasattr(source, "columns"):
        names = list(source.keys()) if isinstance(source, Mapping) else list(source.columns)
        columns = {}
        for c in names:
            values = np.asarray(source[c])
            if values.ndim != 1:
                raise ArgumentError(
                    name,
                    f"{name} column {c!r} must be a 1-D sequence of values; "
                    f"got {one_line(source[c])}",
                )
            columns[str(c).strip()] = list(values.tolist())
        return columns
    raise ArgumentError(
        name,
        f"{name} must be a path, an open text file or a mapping of columns; "
        f"got {one_line(source)}",
    )


def _columns_from_rows(
    rows: list[dict[str, Any]], where: str, expected: str
) -> dict[str, list[Any]]:
    if not rows:
        raise ValueError(f"{where} is empty: expected a header with {expected}")
    names = list(rows[0])
    cols: dict[str, list[Any]] = {str(n).strip(): [] for n in names}
    for row in rows:
        for raw in names:
            cols[str(raw).strip()].append(row.get(raw))
    return cols
