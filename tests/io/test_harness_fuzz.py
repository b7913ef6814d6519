"""The harness readers fed real logs mutated byte by byte: Inspect's own ``.eval`` archive
(Zstandard, tests/io/harness_logs/) and the same members repacked stored, deflated, bzip2-
and LZMA-compressed, its gzipped JSON log and an lm-evaluation-harness samples file. A
seeded generator overwrites a byte anywhere, a byte of a zip header (local header, central
directory, end record: sizes, methods, flags, offsets), or cuts the file short.

Each case must read, or be refused with one ``ValueError`` (a ``SizeError`` is one) whose
message names the file; nothing else may escape, and no case may take much memory (the
peak of Python's allocations per case, and the child's peak resident size). The cases run
in a child process so that its peak resident size is theirs alone. A sample of them runs
through the command line too: exit 0, 2, or 1 with one line on stderr naming the file.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from commands import run_cli
from common import run_python

LOGS = Path(__file__).resolve().parent / "harness_logs"
# 7 bases: 700 cases, about 10 s on one core (more: TRUESCORE_ARCHIVE_FUZZ_CASES=N each)
CASES_PER_BASE = int(os.environ.get("TRUESCORE_ARCHIVE_FUZZ_CASES", "100"))
SEED = 36

FUZZ = r"""
import io, json, random, sys, tracemalloc, warnings, zipfile
from pathlib import Path
import truescore_fast as tf
sys.path[:0] = [sys.argv[4], str(Path(sys.argv[4]).parent)]
from test_harness_fuzz import bases, mutate

logs, out, per_base = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
rng = random.Random(int(sys.argv[5]))
fresh = {"inspect": logs / "inspect/mean/arith-fresh1.eval",
         "lm-eval": next((logs / "lm_eval/toy__alpha").glob("samples_arith_mc_fresh1_*"))}
keys = {"inspect": "metadata.parent_id", "lm-eval": "doc.parent_id"}
metrics = {"inspect": None, "lm-eval": "acc"}
counts, bad, unnamed, peak, unmutated = {}, [], [], 0, {}
for name, (family, suffix, data) in bases(logs).items():
    for case in range(-1, per_base):  # case -1: the log as it is, which must read
        path = out / f"{name}-{case}{suffix}"
        path.write_bytes(data if case < 0 else mutate(data, rng))
        tracemalloc.start()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tf.read_harness_runs(path, fresh[family], match_key=keys[family],
                                     metric=metrics[family])
            outcome = "read"
        except (ValueError, MemoryError) as error:
            outcome = type(error).__name__
            if not isinstance(error, ValueError) or str(path) not in str(error):
                unnamed.append(f"{path.name}: {type(error).__name__}: {error}"[:300])
        except Exception as error:
            outcome = "escaped"
            bad.append(f"{path.name}: {type(error).__name__}: {error}"[:300])
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        if case < 0:
            unmutated[name] = outcome
            continue
        counts[f"{name} {outcome}"] = counts.get(f"{name} {outcome}", 0) + 1
# the peak resident size of this process's memory since its exec (ru_maxrss would count
# the parent's: Linux carries it over fork and exec)
status = Path("/proc/self/status")
lines = status.read_text().splitlines() if status.exists() else ["VmHWM: 0 kB"]  # not Linux
rss = int(next(l for l in lines if l.startswith("VmHWM:")).split()[1]) * 1024
print(json.dumps({"counts": counts, "bad": bad, "unnamed": unnamed, "peak": peak,
                  "rss": rss, "unmutated": unmutated}))
"""


def bases(logs: Path) -> dict[str, tuple[str, str, bytes]]:
    """name -> (harness, file suffix, bytes) of each real log the cases mutate."""
    import io
    import zipfile

    from truescore_fast.io._archive import read_member

    eval_log = (logs / "inspect/mean/arith-public.eval").read_bytes()
    with zipfile.ZipFile(io.BytesIO(eval_log)) as archive:
        members = {i.filename: read_member(eval_log, archive, i, "m") for i in archive.infolist()}
    found = {"zstd": ("inspect", ".eval", eval_log)}
    for name, method in (("stored", 0), ("deflate", 8), ("bzip2", 12), ("lzma", 14)):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", compression=method) as archive:
            for member, content in members.items():
                archive.writestr(member, content)
        found[name] = ("inspect", ".eval", out.getvalue())
    json_log = logs / "inspect/mean/arith-fresh2.json.gz"
    found["json.gz"] = ("inspect", ".json.gz", json_log.read_bytes())
    samples = next((logs / "lm_eval/toy__alpha").glob("samples_arith_mc_public_*"))
    found["jsonl"] = ("lm-eval", ".jsonl", samples.read_bytes())
    return found


_HEADERS = ((b"PK\x03\x04", 30), (b"PK\x01\x02", 46), (b"PK\x05\x06", 22))


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One case: a byte overwritten anywhere (40%), a byte of a zip header overwritten
    (45%; anywhere in a file without one), or the file cut short (15%)."""
    out = bytearray(data)
    draw = rng.random()
    headers = [
        (at, length)
        for signature, length in _HEADERS
        for at in range(len(out))
        if out.startswith(signature, at)
    ]
    if draw < 0.85:
        if draw < 0.4 or not headers:
            at = rng.randrange(len(out))
        else:
            start, length = rng.choice(headers)
            at = start + rng.randrange(length)
        out[at] = rng.randrange(256)
        return bytes(out)
    return bytes(out[: rng.randrange(len(out))])


@pytest.mark.slow
def test_mutated_real_logs_are_read_or_refused_in_one_error_with_little_memory(tmp_path):
    proc = run_python(
        FUZZ, str(LOGS), str(tmp_path), str(CASES_PER_BASE), str(Path(__file__).parent),
        str(SEED), timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    counts = result["counts"]
    print(json.dumps(result, indent=1))  # the counts and peaks, for the record (-s)
    assert result["bad"] == [], result["bad"]  # no exception but ValueError escaped
    assert result["unnamed"] == [], result["unnamed"]  # every error names the file
    assert set(result["unmutated"].values()) == {"read"}, result["unmutated"]
    assert sum(counts.values()) == 7 * CASES_PER_BASE
    # The cases do reach the readers: some read, many are refused, in every base
    for name in ("zstd", "stored", "deflate", "bzip2", "lzma", "json.gz", "jsonl"):
        assert counts.get(f"{name} ValueError", 0) > CASES_PER_BASE // 10, (name, counts)
    # and some damage is harmless (a byte of a file name, of a date, of text): read
    for name in ("zstd", "stored", "deflate", "bzip2", "lzma", "jsonl"):
        assert counts.get(f"{name} read", 0) > 0, (name, counts)
    # Memory: the logs are 17-50 kB (their text about 1 MB); no case may allocate more
    # than 64 MiB in Python, nor the whole child reach 400 MB resident (NumPy, SciPy and
    # the library themselves: about 80 MB)
    assert result["peak"] < 64 << 20, result["peak"]
    assert result["rss"] < 400e6, result["rss"]


@pytest.mark.slow
def test_mutated_archives_are_one_line_at_the_command_line(tmp_path):
    rng = random.Random(SEED)
    fresh = LOGS / "inspect/mean/arith-fresh1.eval"
    codes = []
    for name, (family, suffix, data) in bases(LOGS).items():
        if family != "inspect":
            continue
        for case in range(8):
            path = tmp_path / f"{name}-{case}{suffix}"
            path.write_bytes(mutate(data, rng))
            code, _, err = run_cli(
                "audit", "--public", path, "--fresh", fresh, "--match-key", "metadata.parent_id"
            )
            codes.append(code)
            assert code in (0, 1, 2), (path.name, code, err)
            assert "Traceback" not in err, err
            if code == 1:
                lines = err.splitlines()
                assert len(lines) == 1 and lines[0].startswith("error: "), err
                assert str(path) in lines[0], err
    assert codes.count(1) > 10, codes  # most damage is refused
