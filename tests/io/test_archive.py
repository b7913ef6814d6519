"""Zip members in every compression Inspect writes (truescore_fast.io._archive): Zstandard
(method 93) members, several frames each as Inspect writes them, read without patching
zipfile; damaged members refused; and Inspect's own .eval logs (Zstandard, written by
inspect-ai 0.3.285, tests/io/harness_logs/) read by the command line in a fresh process
that never imports inspect_ai."""

from __future__ import annotations

import gzip
import io
import json
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
import truescore_fast as tf
from commands import assert_one_line_error, run_cli, run_cli_process
from truescore_fast.io import _archive
from truescore_fast.io._archive import ZIP_ZSTANDARD, read_member

if sys.version_info >= (3, 14):
    from compression.zstd import compress
else:  # the package's dependency on these Pythons
    from zstandard import ZstdCompressor

    compress = ZstdCompressor().compress

LOGS = Path(__file__).resolve().parent / "harness_logs" / "inspect"


def zstd_archive(members: dict[str, bytes], *, frames: int = 3, recorded=None) -> bytes:
    """A zip whose members are Zstandard-compressed in ``frames`` frames, written here
    with a stored entry whose header is then rewritten to method 93 (zipfile before 3.14
    cannot write Zstandard); the sizes and CRC-32 recorded are those of ``recorded``
    (default: the content)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in members.items():
            step = max(1, -(-len(content) // frames))
            parts = [content[i : i + step] for i in range(0, len(content), step)] or [b""]
            packed = b"".join(compress(p) for p in parts)
            info = zipfile.ZipInfo(name, date_time=(2026, 12, 2, 0, 0, 0))
            archive.writestr(info, packed)  # stored: the compressed bytes as they are
            info.CRC, info.file_size = zlib.crc32(content), len(content)
    data = bytearray(out.getvalue())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        infos = archive.infolist()
    for info, content in zip(infos, members.values(), strict=True):
        content = content if recorded is None else recorded
        for offset in (info.header_offset, _find_central(data, info.filename)):
            method_at = offset + (8 if offset == info.header_offset else 10)
            data[method_at : method_at + 2] = ZIP_ZSTANDARD.to_bytes(2, "little")
            crc_at = offset + (14 if offset == info.header_offset else 16)
            data[crc_at : crc_at + 4] = zlib.crc32(content).to_bytes(4, "little")
            size_at = crc_at + 8  # after the CRC and the compressed size
            data[size_at : size_at + 4] = len(content).to_bytes(4, "little")
    return bytes(data)


def _find_central(data: bytearray, name: str) -> int:
    start = 0
    while True:
        at = data.index(b"PK\x01\x02", start)
        length = int.from_bytes(data[at + 28 : at + 30], "little")
        if data[at + 46 : at + 46 + length].decode() == name:
            return at
        start = at + 4


def read_all(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {
            info.filename: read_member(data, archive, info, f"x member {info.filename}")
            for info in archive.infolist()
        }


def test_zstandard_members_of_several_frames_read_as_written():
    members = {"header.json": b'{"status": "success"}', "samples/1.json": b"x" * 5000 + b"y"}
    data = zstd_archive(members)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert {i.compress_type for i in archive.infolist()} == {ZIP_ZSTANDARD}
        with pytest.raises(NotImplementedError) if sys.version_info < (3, 14) else _nothing():
            archive.read("header.json")  # what the standard library makes of it
    assert read_all(data) == members


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_deflated_and_stored_members_still_go_through_zipfile():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("a.json", b"[1]", compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("b.json", b"[2]", compress_type=zipfile.ZIP_STORED)
    assert read_all(out.getvalue()) == {"a.json": b"[1]", "b.json": b"[2]"}


def test_a_damaged_zstandard_member_is_an_error_naming_it():
    content = b'{"a": 1}' * 50
    packed = compress(content)
    data = zstd_archive({"m.json": content}, frames=1)
    assert packed in data and read_all(data) == {"m.json": content}
    with pytest.raises(ValueError, match=r"x member m.json: not a readable Zstandard member"):
        read_all(data.replace(packed, b"\x00" * len(packed)))
    # a member whose content is not what the archive records (size, CRC-32)
    for recorded in (content + b" ", content[:-1] + b"]"):
        data = zstd_archive({"m.json": content}, recorded=recorded)
        with pytest.raises(ValueError, match=r"x member m.json: damaged .*size or CRC-32"):
            read_all(data)


def test_without_a_zstandard_module_the_message_says_what_to_install(monkeypatch):
    monkeypatch.setattr(_archive, "_module", lambda name: None)
    data = zstd_archive({"m.json": b"{}"})
    with pytest.raises(ValueError, match="compressed with Zstandard: install the zstandard"):
        read_all(data)


def test_inspects_own_eval_logs_are_zstandard_throughout():
    logs = sorted(LOGS.rglob("*.eval"))
    assert len(logs) >= 10
    for log in logs:
        with zipfile.ZipFile(log) as archive:
            assert {i.compress_type for i in archive.infolist()} == {ZIP_ZSTANDARD}, log


def test_the_command_line_reads_inspects_default_logs_without_inspect_ai():
    """In a process of its own that never imports inspect_ai (which patches zipfile): the
    audit of Inspect's Zstandard .eval logs runs, and zipfile is left as it was."""
    public, fresh = LOGS / "mean" / "arith-public.eval", LOGS / "mean" / "arith-fresh1.eval"
    pre = (
        "import atexit, sys, zipfile\n"
        "def check():\n"
        "    assert 'inspect_ai' not in sys.modules\n"
        "    if sys.version_info < (3, 14):  # zipfile itself still cannot decompress it\n"
        f"        with zipfile.ZipFile({str(public)!r}) as archive:\n"
        "            try:\n"
        "                archive.read('header.json')\n"
        "            except NotImplementedError:\n"
        "                pass\n"
        "            else:\n"
        "                raise AssertionError('zipfile was patched')\n"
        "    print('zipfile untouched', file=sys.stderr)\n"
        "atexit.register(check)\n"
    )
    code, out, err = run_cli_process(
        "audit", "--public", public, "--fresh", fresh, "--match-key", "metadata.parent_id",
        "--json", pre=pre,
    )  # fmt: skip
    assert code == 0, err
    assert "zipfile untouched" in err and "Traceback" not in err
    doc = json.loads(out)
    assert list(doc["models"]) == ["mockllm/model"]
    in_process = tf.read_harness_runs(public, fresh, match_key="metadata.parent_id")
    assert doc["models"]["mockllm/model"]["n"] == len(in_process.parents) == 8


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED])
def test_a_member_too_large_for_memory_is_refused_before_it_is_inflated(monkeypatch, method):
    # 64 MiB of spaces (64 kB deflated) on a machine said to have 48 MB: any compression,
    # refused by the readers' one rule before a byte is decompressed
    from truescore_fast import _files

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        archive.writestr("header.json", b" " * (64 << 20))
    monkeypatch.setattr(_files, "memory_limit", lambda: 48 << 20)
    data = buffer.getvalue()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("header.json")
        with pytest.raises(MemoryError, match="run.eval:header.json"):
            read_member(data, archive, info, "run.eval:header.json")


# ------------------------------------------------- hostile archives: every compression

METHODS = {
    "stored": zipfile.ZIP_STORED,
    "deflate": zipfile.ZIP_DEFLATED,
    "bzip2": zipfile.ZIP_BZIP2,
    "lzma": zipfile.ZIP_LZMA,
}


def _members(log: Path) -> dict[str, bytes]:
    data = log.read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {i.filename: read_member(data, archive, i, "m") for i in archive.infolist()}


def repack(members: dict[str, bytes], method: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=method) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out.getvalue()


def forge(data: bytes, name: str, *, size=None, flags=None, method=None) -> bytes:
    """``data`` with member ``name``'s recorded size, flag bits or method rewritten, in the
    central directory and in the local header alike (the places zip readers look)."""
    out = bytearray(data)
    central = _find_central(out, name)
    local = int.from_bytes(out[central + 42 : central + 46], "little")
    for at, flag_at, method_at, size_at in ((central, 8, 10, 24), (local, 6, 8, 22)):
        if size is not None:
            out[at + size_at : at + size_at + 4] = size.to_bytes(4, "little")
        if flags is not None:
            out[at + flag_at : at + flag_at + 2] = flags.to_bytes(2, "little")
        if method is not None:
            out[at + method_at : at + method_at + 2] = method.to_bytes(2, "little")
    return bytes(out)


def _peak_bytes(call) -> tuple[BaseException | None, int]:
    """(the exception ``call()`` raised or None, the peak of the memory Python allocated
    meanwhile: tracemalloc counts every bytes object the decompressors return)."""
    import tracemalloc

    tracemalloc.start()
    try:
        call()
        raised = None
    except BaseException as error:  # noqa: BLE001 - returned to the test
        raised = error
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return raised, peak


@pytest.mark.parametrize("method", [*METHODS, "zstd"])
def test_inspects_members_read_the_same_in_every_compression(method):
    members = _members(LOGS / "mean" / "arith-public.eval")
    data = zstd_archive(members) if method == "zstd" else repack(members, METHODS[method])
    assert read_all(data) == members


@pytest.mark.parametrize("method", ["deflate", "bzip2", "lzma"])
def test_a_member_that_forges_its_size_is_refused_while_it_expands(method):
    # 64 MiB of zeros (bzip2: 45 bytes, deflate: 64 kB) recorded as 1,000 bytes: reading
    # stops a step past the recorded size, so the peak stays near one step (1 MiB), far
    # below the content (zipfile's own read holds the whole of it, and more, at once)
    data = forge(repack({"header.json": bytes(64 << 20)}, METHODS[method]), "header.json",
                 size=1000)  # fmt: skip
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("header.json")
        raised, peak = _peak_bytes(lambda: read_member(data, archive, info, "r.eval member h"))
    assert isinstance(raised, ValueError) and not isinstance(raised, MemoryError), raised
    assert str(raised).startswith("r.eval member h: damaged"), raised
    assert peak < 8 << 20, peak


def test_the_budget_counts_every_member_of_a_file_together(monkeypatch, tmp_path):
    # 12 members of 4 MiB each (each well under the readers' limit, here 16 MiB of text
    # on a machine said to have 512 MiB): the 48 MiB they hold together are refused once
    # the file has decompressed 16 MiB, while it reads, not after
    from truescore_fast import _files

    header = json.dumps({"version": 2, "status": "success", "eval": {"model": "m"}}).encode()
    members = {"header.json": header}
    members.update({f"samples/{i}.json": b" " * (4 << 20) + b"{}" for i in range(12)})
    path = tmp_path / "run.eval"
    path.write_bytes(repack(members, zipfile.ZIP_DEFLATED))
    monkeypatch.setattr(_files, "memory_limit", lambda: 512 << 20)
    fresh = LOGS / "mean" / "arith-fresh1.eval"
    raised, peak = _peak_bytes(lambda: tf.read_harness_runs(path, fresh, match_key="id"))
    assert isinstance(raised, MemoryError), raised
    assert str(raised).startswith(f"{path} (decompressed) needs"), raised
    assert peak < 32 << 20, peak  # the 16 MiB budget, one step, the JSON of 3 members
    # the same members one at a time are each read
    members.popitem()
    assert len(read_all(repack(dict(list(members.items())[:4]), zipfile.ZIP_DEFLATED))) == 4


@pytest.mark.parametrize("flags", [0x1, 0x41])  # encrypted; and strong encryption
@pytest.mark.parametrize("method", ["deflate", "zstd"])
def test_an_encrypted_member_is_an_error_naming_it(flags, method):
    members = {"m.json": b"[1]"}
    data = zstd_archive(members) if method == "zstd" else repack(members, METHODS[method])
    with pytest.raises(ValueError, match=r"^x member m.json: an encrypted member"):
        read_all(forge(data, "m.json", flags=flags))


@pytest.mark.parametrize("number", [1, 6, 9, 98, 99, 0xFFFF])  # shrunk ... AES, unknown
def test_a_compression_method_not_listed_is_an_error_naming_it(number):
    data = forge(repack({"m.json": b"[1]"}, zipfile.ZIP_DEFLATED), "m.json", method=number)
    with pytest.raises(ValueError, match=rf"^x member m.json: compression method {number}, "):
        read_all(data)


@pytest.mark.parametrize("method", [*METHODS, "zstd"])
def test_a_truncated_member_is_an_error_naming_it(method):
    content = json.dumps(list(range(3000))).encode()
    data = (
        zstd_archive({"m.json": content})
        if method == "zstd"
        else repack({"m.json": content}, METHODS[method])
    )
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("m.json")
    # the member's compressed bytes zeroed from the middle on (the archive's directory
    # kept): a stream that stops, or never ends
    begin = info.header_offset + 30 + len("m.json")
    half, end = begin + info.compress_size // 2, begin + info.compress_size
    cut = data[:half] + bytes(end - half) + data[end:]
    with pytest.raises(ValueError, match=r"^x member m.json: (damaged|not a readable)"):
        read_all(cut)


def _padded(log: Path, pad: int) -> bytes:
    """Inspect's log ``log`` deflated again, each sample padded with ``pad`` spaces (still
    the same JSON): a run that reads, decompressing about 16 x ``pad`` bytes."""
    members = _members(log)
    for name in members:
        if name.startswith("samples/"):
            members[name] += b" " * pad
    return repack(members, zipfile.ZIP_DEFLATED)


def test_the_run_budget_counts_every_file_of_one_reader_call_together(monkeypatch, tmp_path):
    # Two runs of about 10 MiB of text each, each under the readers' limit (here 16 MiB on
    # a machine said to have 512 MiB): each reads alone, but the two together are refused
    # once they have decompressed 16 MiB, while the second expands, naming its member
    from truescore_fast import _files

    public, fresh = tmp_path / "public.eval", tmp_path / "fresh.eval"
    public.write_bytes(_padded(LOGS / "mean" / "arith-public.eval", 10 << 16))
    fresh.write_bytes(_padded(LOGS / "mean" / "arith-fresh1.eval", 10 << 16))
    monkeypatch.setattr(_files, "memory_limit", lambda: 512 << 20)
    small = LOGS / "mean" / "arith-fresh2.json.gz"
    for one in (public, fresh):  # alone (with a small run): read
        pair = (one, small) if one is public else (small, one)
        assert len(tf.read_harness_runs(*pair, match_key="metadata.parent_id").parents) == 8
    raised, peak = _peak_bytes(
        lambda: tf.read_harness_runs(public, fresh, match_key="metadata.parent_id")
    )
    assert isinstance(raised, MemoryError), raised
    message = str(raised)
    assert message.startswith(f"{fresh} member samples/"), message
    assert "(decompressed, with the files read before it in this run) needs" in message
    assert "\n" not in message
    assert peak < 40 << 20, peak  # the budget and a step, not the 20 MiB and more of both
    # the command line: exit 1, one line naming the file and the member
    code, _, err = run_cli(
        "audit", "--public", public, "--fresh", fresh, "--match-key", "metadata.parent_id"
    )
    assert_one_line_error(code, err, f"{fresh} member samples/", "in this run")


def test_a_run_budget_inside_another_shares_its_total_unless_separate(monkeypatch):
    from truescore_fast import _files

    with _files.run_budget(100):
        _files.Budget("a.eval").take(60, "a.eval member x")
        with _files.run_budget(1000):  # nested: the outer total, 40 bytes left
            with pytest.raises(MemoryError, match=r"^b.eval member y \(decompressed, with"):
                _files.Budget("b.eval").take(60, "b.eval member y")
        with _files.run_budget(100, separate=True):  # a total of its own
            _files.Budget("c.eval").take(90, "c.eval member z")
    # gzip streams count too; outside any block only each file's own budget applies
    data = gzip.compress(b"x" * 5000)
    with _files.run_budget(4000), pytest.raises(MemoryError, match=r"^g.gz \(decompressed"):
        _files._gunzip(data, "g.gz")
    assert _files._gunzip(data, "g.gz") == b"x" * 5000
