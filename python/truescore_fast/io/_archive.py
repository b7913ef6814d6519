"""A zip archive's members read whatever compression wrote them: stored, deflate, bzip2
and LZMA through the standard library's ``zipfile``, Zstandard (ZIP method 93, what
Inspect writes every ``.eval`` member with) through the standard library's
``compression.zstd`` where the Python has it (3.14 and later) and the ``zstandard``
package otherwise (a dependency of this package on those Pythons).

``zipfile`` before 3.14 lists a Zstandard member but cannot decompress it; Inspect
patches ``zipfile`` when it is imported, so a process that never imported it (the command
line) could not read Inspect's default logs. Here the member's compressed bytes are cut
from the archive at its local header and decompressed directly, and the result is
checked against the sizes and the CRC-32 the archive records; ``zipfile`` is not patched.
Not a public API.
"""

from __future__ import annotations

import importlib
import io
import struct
import zipfile
import zlib
from typing import Any

from truescore_fast._files import check_text_size

__all__ = ["ZIP_ZSTANDARD", "read_member"]

ZIP_ZSTANDARD = 93
"""The ZIP compression method number of Zstandard (APPNOTE 4.4.5)."""

_LOCAL_HEADER = struct.Struct("<IHHHHHIIIHH")  # signature ... file name and extra lengths
_LOCAL_SIGNATURE = 0x04034B50


def read_member(data: bytes, archive: zipfile.ZipFile, info: zipfile.ZipInfo, where: str) -> bytes:
    """The decompressed content of member ``info`` of ``archive`` (whose bytes are
    ``data``), or a ValueError naming ``where`` (the member)."""
    # every compression: a small archive can hold a member of terabytes
    check_text_size(where, info.file_size, "extract the member to a file first")
    if info.compress_type != ZIP_ZSTANDARD:
        try:
            return archive.read(info)
        except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError) as error:
            raise ValueError(f"{where}: cannot read ({error})") from None
    if info.flag_bits & 0x1:
        raise ValueError(f"{where}: cannot read an encrypted member")
    content = _zstd_decompress(_compressed_bytes(data, info, where), info.file_size, where)
    if len(content) != info.file_size or zlib.crc32(content) != info.CRC:
        raise ValueError(
            f"{where}: damaged Zstandard member (its size or CRC-32 is not the archive's)"
        )
    return content


def _compressed_bytes(data: bytes, info: zipfile.ZipInfo, where: str) -> bytes:
    """The member's compressed bytes, found after its local header."""
    start = info.header_offset
    header = data[start : start + _LOCAL_HEADER.size]
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


def _zstd_decompress(raw: bytes, size: int, where: str) -> bytes:
    """Every Zstandard frame of ``raw`` decompressed (Inspect writes several frames per
    member), reading at most ``size + 1`` bytes so that a member that expands past its
    recorded size is refused, not allocated."""
    stdlib = _module("compression.zstd")
    package: Any = None if stdlib is not None else _module("zstandard")
    if stdlib is None and package is None:
        raise ValueError(
            f"{where} is compressed with Zstandard: install the zstandard package "
            "(pip install zstandard), a dependency of truescore-fast on Python < 3.14"
        )
    try:
        if stdlib is not None:
            with stdlib.ZstdFile(io.BytesIO(raw)) as stream:
                return bytes(stream.read(size + 1))
        with package.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as reader:
            return bytes(reader.read(size + 1))
    except Exception as error:  # zstandard.ZstdError, compression.zstd.ZstdError, EOFError
        raise ValueError(f"{where}: not a readable Zstandard member ({error})") from None


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
