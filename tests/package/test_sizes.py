"""Sizes are checked before allocating: a call that would allocate more than the process
can have is refused at once with one line naming the argument (``SizeError``: a
``MemoryError``, as truescore's would be, and a ``ValueError``), instead of allocating.

Each case runs in a child whose address space is capped (RLIMIT_AS, 2 GB), so a
regression fails with NumPy's own MemoryError (or a crash) instead of taking the machine's
memory; the cap is also the limit the check reads (memory_limit)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import truescore_fast as tf
from common import run_python
from truescore_fast._validation import SizeError, check_array_size, check_size

# AddressSanitizer reserves terabytes of address space: no RLIMIT_AS under it.
needs_address_space = pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""), reason="no RLIMIT_AS under ASan"
)

CAP = 2 << 30

# case -> (the call, the argument its message must name)
CASES = {
    "audit_order": ("tf.audit_order(2**31)", "population_size"),
    "sequential_order_study": (
        "tf.sequential_order_study(n_shards=2**31, replications=30)",
        "n_shards",
    ),
    "exchangeability_test": ("tf.exchangeability_test(0.0, BIG)", "permuted_logliks"),
    "exchangeability_test_canonical": ("tf.exchangeability_test(BIG, [1.0])", "canonical_loglik"),
    "holm": ("tf.holm(BIG)", "p_values"),
    "benjamini_hochberg": ("tf.benjamini_hochberg(BIG)", "p_values"),
    "paired_bootstrap": ("tf.paired_bootstrap(BIG, BIG)", "a"),
    "paired_permutation": ("tf.paired_permutation(BIG, BIG)", "a"),
    "combine_shards": ("tf.combine_shards(BIG)", "p_values"),
    "linear_weighted_kappa": ("tf.linear_weighted_kappa(BIG, BIG, categories=[0.5, 1.0])", "a"),
    "linear_weighted_kappa_int": (
        "tf.linear_weighted_kappa([1, 2], np.broadcast_to(1, (10**10,)), categories=[1, 2])",
        "b",
    ),
    "holm_int": ("tf.holm(np.broadcast_to(np.int8(0), (10**10,)))", "p_values"),
}

CHILD = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))
import numpy as np, truescore_fast as tf
from truescore_fast._validation import SizeError
BIG = np.broadcast_to(0.5, (10**10,))  # 80 GB to a copy, 10 GB to a mask; 8 bytes here
out = {{}}
for name, call in {calls!r}.items():
    try:
        eval(call)
        out[name] = ["returned", ""]
    except BaseException as error:
        kind = "SizeError" if isinstance(error, SizeError) else type(error).__name__
        out[name] = [kind, str(error)]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def outcomes() -> dict[str, list[str]]:
    calls = {name: call for name, (call, _) in CASES.items()}
    proc = run_python(CHILD.format(cap=CAP, calls=calls), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


@needs_address_space
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_call_too_large_for_memory_is_refused_before_allocating(case, outcomes) -> None:
    kind, message = outcomes[case]
    assert kind == "SizeError", (kind, message)
    name = CASES[case][1]
    assert message.startswith(f"{name} needs ") or message.startswith(f"{name} x "), message
    assert "\n" not in message
    assert "more than the 2.1 GB available" in message  # the cap, as memory_limit reads it


def test_size_error_is_both_a_memory_error_and_a_value_error() -> None:
    with pytest.raises(MemoryError) as as_memory:
        check_size("n_resamples x n", 1e12, 8.0)
    with pytest.raises(ValueError):
        check_size("n_resamples x n", 1e12, 8.0)
    assert isinstance(as_memory.value, SizeError)
    assert str(as_memory.value).startswith("n_resamples x n needs 8.0 TB of memory, more than")


def test_small_sizes_and_lists_pass_without_a_look_at_the_machine() -> None:
    import numpy as np

    check_size("n", 1000)
    check_array_size("values", [0.5] * 10)
    check_array_size("values", np.zeros(10))
    check_array_size("values", np.broadcast_to(0.5, (1000,)))
    with pytest.raises(SizeError, match="^values needs 90.0 GB"):
        check_array_size("values", np.broadcast_to(0.5, (10**10,)))  # a mask and a copy


# ---- readers: the text a file holds (or inflates to) is bounded before it is read -----


def _audit_csv(path: Path, parents: int) -> Path:
    lines = ["parent,form,correct,model"]
    for i in range(parents):
        lines += [f"p{i},public,{i % 2},m", f"p{i},fresh1,{(i // 2) % 2},m"]
    path.write_text("\n".join(lines) + "\n")
    return path


@needs_address_space
def test_a_gzip_bomb_is_refused_without_inflating_it(tmp_path) -> None:
    # 1 GiB of zeros packed to ~1 MB (64 gzip members), read under a 2 GB address-space
    # cap: refused once the inflated text passes what rows of it could be held in
    # (2 GB / 32), in one line naming the file; inflating it all would pass the cap.
    import gzip

    path = tmp_path / "bomb.csv.gz"
    member = gzip.compress(bytes(16 << 20), compresslevel=9)  # gzip members back to back
    path.write_bytes(gzip.compress(b"parent,form,correct\n") + member * 64)
    assert path.stat().st_size < 4 << 20
    code = f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP}))
        import truescore_fast as tf
        from truescore_fast._validation import SizeError
        try:
            tf.read_audit_table({str(path)!r})
        except SizeError as error:
            print(error)
            sys.exit(0)
        sys.exit(1)
    """
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (line,) = proc.stdout.splitlines()
    assert line.startswith(f"{path} (decompressed) needs "), line
    assert "decompress it and split it" in line


def test_a_table_too_large_for_memory_is_refused_before_it_is_read(tmp_path, monkeypatch):
    # As on a machine with 64 MB: a 2.5 MB table would need about 80 MB to read.
    import truescore_fast._files as files
    import truescore_fast._validation as validation

    path = _audit_csv(tmp_path / "audit.csv", 60_000)
    assert path.stat().st_size > 2 << 20
    monkeypatch.setattr(validation, "memory_limit", lambda: 64 << 20)
    monkeypatch.setattr(files, "memory_limit", lambda: 64 << 20)
    with pytest.raises(SizeError, match=f"^{path} needs .* split it into smaller files$"):
        tf.read_audit_table(path)


def test_reading_a_table_stays_within_the_memory_the_check_assumes(tmp_path) -> None:
    # The bound the readers check (32 bytes per byte of text) holds: the peak resident
    # memory a 200,000-row audit table adds, read and audited, is below it.
    path = _audit_csv(tmp_path / "audit.csv", 100_000)
    code = f"""
        import resource
        import truescore_fast as tf
        tf.matched_form_audit([0.0, 1.0], [[1.0], [0.0]])  # everything imported and warm
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        data = tf.read_audit_table({str(path)!r})
        tf.matched_form_audits(data)
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
    """
    proc = run_python(code, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    added_kb = int(proc.stdout.split()[-1])
    assert added_kb * 1024 < 32 * path.stat().st_size, (added_kb, path.stat().st_size)
