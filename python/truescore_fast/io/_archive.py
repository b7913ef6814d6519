"""A zip archive's members read whatever compression wrote them: stored, deflate, bzip2,
LZMA and Zstandard (ZIP method 93, what Inspect writes every ``.eval`` member with), each
decompressed here, piece by piece, from the member's compressed bytes cut from the archive
at its local header (``zipfile`` before 3.14 lists a Zstandard member but cannot decompress
it, and ``zipfile`` decompresses a bzip2 or LZMA member in steps of unbounded size).
Zstandard goes through the standard library's ``compression.zstd`` where the Python has it
(3.14 and later) and the ``zstandard`` package otherwise (a dependency of this package on
those Pythons); ``zipfile`` is not patched.

Every archive is read as if it were hostile: the result is checked against the size and
the CRC-32 the archive records; decompression stops at one byte past the recorded size
(a header may understate it), when the bytes decompressed from the whole file reach its
:class:`Budget` (the readers' one rule: the text they could hold in memory), and when
those of every file of the run together reach the run's (inside
:func:`~truescore_fast._files.run_budget`), checked piece by piece, never after; damaged,
truncated or encrypted members, and compression methods not listed, are a ``ValueError``
naming the file and the member. Not a public API.
"""

from __future__ import annotations

import bz2
import importlib
import io
import lzma
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

from truescore_fast._files import Budget, check_text_size

__all__ = ["ZIP_ZSTANDARD", "read_member"]

ZIP_ZSTANDARD = 93
"""The ZIP compression method number of Zstandard (APPNOTE 4.4.5)."""

_METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "LZMA",
    ZIP_ZSTANDARD: "Zstandard",
}
_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # signature ... file name and extra lengths
_LOCAL_SIGNATURE = 0x04034B50
_PIECE = 1 << 20  # most bytes decompressed in one step


def read_member(
    data: bytes,
    archive: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    where: str,
    budget: Budget | None = None,
) -> bytes:
    """The decompressed content of member ``info`` of ``archive`` (whose bytes are
    ``data``), or a ValueError naming ``where`` (the member). ``budget``: the bytes the
    whole file may still decompress to (a fresh one for this member when None); a
    ``SizeError`` (``MemoryError``) once it is spent."""
    if info.flag_bits & 0x1:
        raise ValueError(f"{where}: an encrypted member, which this reader cannot read")
    method = _METHODS.get(info.compress_type)
    if method is None:
        raise ValueError(
            f"{where}: compression method {info.compress_type}, not one a zip reader here "
            f"knows ({', '.join(_METHODS.values())}); the archive is damaged or not Inspect's"
        )
    # every compression: a small archive can hold a member of terabytes
    check_text_size(where, info.file_size, "extract the member to a file first")
    budget = budget if budget is not None else Budget(where)
    raw = _compressed_bytes(data, info, where)
    pieces, total = [], 0
    try:
        for piece in _decompressed(info.compress_type, raw, info.file_size, where):
            total += len(piece)
            if total > info.file_size:  # stop: more than recorded is damage, or a forgery
                break
            budget.take(len(piece), where)
            pieces.append(piece)
    except (zlib.error, lzma.LZMAError, OSError, EOFError, ValueError) as error:
        if isinstance(error, MemoryError):  # the budget's SizeError: as it is
            raise
        raise ValueError(f"{where}: damaged {method} member ({error})") from None
    content = b"".join(pieces)
    if total != info.file_size or zlib.crc32(content) != info.CRC:
        raise ValueError(
            f"{where}: damaged {method} member (its size or CRC-32 is not the archive's)"
        )
    return content


def _compressed_bytes(data: bytes, info: zipfile.ZipInfo, where: str) -> bytes:
    """The member's compressed bytes, found after its local header."""
    start = info.header_offset
    header = data[start : start + _LOCAL_HEADER.size] if start >= 0 else b""
    if len(header) != _LOCAL_HEADER.size:
        raise ValueError(f"{where}: the archive is truncated (no local header)")
    fields = _LOCAL_HEADER.unpack(header)
    if fields[0] != _LOCAL_SIGNATURE:
        raise ValueError(f"{where}: the archive is damaged (bad local header)")
    begin = start + _LOCAL_HEADER.size + fields[9] + fields[10]
    raw = data[begin : begin + info.compress_size]
    if len(raw) != info.compress_size:
        raise ValueError(f"{where}: the archive is truncated")
    return raw


def _decompressed(method: int, raw: bytes, size: int, where: str) -> Iterator[bytes]:
    """The member's content in pieces of at most ``_PIECE`` bytes (the caller stops past
    ``size``, the recorded size). A stream that ends early yields less; damage raises."""
    if method == zipfile.ZIP_STORED:
        for start in range(0, len(raw), _PIECE):
            yield raw[start : start + _PIECE]
    elif method == ZIP_ZSTANDARD:
        yield from _zstd_pieces(raw, where)
    else:
        yield from _stream_pieces(_decompressor(method, raw, size, where), raw, method)


def _decompressor(method: int, raw: bytes, size: int, where: str) -> Any:
    if method == zipfile.ZIP_DEFLATED:
        return zlib.decompressobj(-15)  # raw deflate
    if method == zipfile.ZIP_BZIP2:
        return bz2.BZ2Decompressor()
    # LZMA in a zip (APPNOTE 5.8.8): a version (2 bytes), the length of the properties
    # (2 bytes, 5), then the properties: lc, lp and pb in one byte, the dictionary size
    if len(raw) < 9 or int.from_bytes(raw[2:4], "little") != 5 or raw[4] >= 9 * 5 * 5:
        raise ValueError(f"{where}: a damaged LZMA member (bad LZMA properties)")
    lc, rest = raw[4] % 9, raw[4] // 9
    lp, pb = rest % 5, rest // 5
    # No match reaches further back than the content's start, so a dictionary larger than
    # the content is never used: a forged size cannot make the decoder allocate gigabytes
    dict_size = min(int.from_bytes(raw[5:9], "little"), max(size, 1 << 12))
    filters = [{"id": lzma.FILTER_LZMA1, "lc": lc, "lp": lp, "pb": pb, "dict_size": dict_size}]
    return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters)


def _stream_pieces(decompressor: Any, raw: bytes, method: int) -> Iterator[bytes]:
    """The output of a zlib, bz2 or lzma decompressor fed ``raw``, at most ``_PIECE``
    bytes a step (each library's ``max_length``): no step can expand without bound."""
    if method == zipfile.ZIP_DEFLATED:
        rest = raw
        while True:
            piece = decompressor.decompress(rest, _PIECE)
            rest = decompressor.unconsumed_tail
            if piece:
                yield piece
            if decompressor.eof or not (piece or rest):
                return
    data = raw[9:] if method == zipfile.ZIP_LZMA else raw
    piece = decompressor.decompress(data, _PIECE)
    while True:
        if piece:
            yield piece
        if decompressor.eof or (decompressor.needs_input and not piece):
            return
        piece = decompressor.decompress(b"", _PIECE)


def _zstd_pieces(raw: bytes, where: str) -> Iterator[bytes]:
    """Every Zstandard frame of ``raw`` decompressed (Inspect writes several frames per
    member), in pieces."""
    stdlib = _module("compression.zstd")
    package: Any = None if stdlib is not None else _module("zstandard")
    if stdlib is None and package is None:
        raise ValueError(
            f"{where} is compressed with Zstandard: install the zstandard package "
            "(pip install zstandard), a dependency of truescore-fast on Python < 3.14"
        )
    try:
        if stdlib is not None:
            stream: Any = stdlib.ZstdFile(io.BytesIO(raw))
        else:
            stream = package.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        with stream:
            while piece := stream.read(_PIECE):
                yield bytes(piece)
    except Exception as error:  # zstandard.ZstdError, compression.zstd.ZstdError, EOFError
        if isinstance(error, (MemoryError, GeneratorExit)):
            raise
        raise ValueError(f"{where}: not a readable Zstandard member ({error})") from None


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
