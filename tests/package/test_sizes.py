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


@pytest.mark.slow
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


# ------------------------------------------------- what is available, not what is installed


def _machine(monkeypatch, tmp_path, *, available_kb, cgroup=None, self_cgroup=None):
    """Point memory_limit at a /proc/meminfo of a 25 GB machine with ``available_kb``
    available, a cgroup folder holding the files of ``cgroup`` (name -> text) and a
    /proc/self/cgroup of ``self_cgroup``; no address-space limit."""
    from truescore_fast import _validation as validation

    meminfo = tmp_path / "meminfo"
    meminfo.write_text(
        f"MemTotal: 25000000 kB\nMemFree: 1000 kB\nMemAvailable: {available_kb} kB\n"
    )
    root = tmp_path / "cgroup"
    for name, text in (cgroup or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    own = tmp_path / "self_cgroup"
    own.write_text(self_cgroup or "0::/\n")
    monkeypatch.setattr(validation, "_MEMINFO", str(meminfo))
    monkeypatch.setattr(validation, "_CGROUP_ROOT", str(root))
    monkeypatch.setattr(validation, "_SELF_CGROUP", str(own))
    monkeypatch.setattr(validation, "_ADDRESS_SPACE", False)
    return validation


def test_the_limit_is_the_memory_available_not_the_memory_installed(monkeypatch, tmp_path):
    # 25 GB installed, 10 GB available: a 24 GB request is refused (it was accepted)
    validation = _machine(monkeypatch, tmp_path, available_kb=10_000_000)
    assert validation.memory_limit() == 10_240_000_000
    with pytest.raises(SizeError, match=r"^n_resamples needs 24.0 GB of memory, more than the "
                       r"10.2 GB available"):  # fmt: skip
        check_size("n_resamples", 3e9, 8.0)
    check_size("n_resamples", 1e9, 8.0)  # 8 GB: fits


@pytest.mark.parametrize(
    ("files", "own", "room"),
    [  # cgroup v2 seen from inside a container: the root folder is the container's
        ({"memory.max": "4000000000\n", "memory.current": "1000000000\n"}, None, 3e9),
        # the process's own cgroup, from /proc/self/cgroup
        ({"job/run.scope/memory.max": "6000000000\n", "job/run.scope/memory.current": "0\n"},
         "0::/job/run.scope\n", 6e9),
        # no limit: "max" (v2), about 2**63 (v1); the machine's available memory decides
        ({"memory.max": "max\n", "memory.current": "5\n"}, None, 10_240_000_000),
        ({"memory/memory.limit_in_bytes": "9223372036854771712\n"}, None, 10_240_000_000),
        # cgroup v1, with a limit
        ({"memory/memory.limit_in_bytes": "2000000000\n",
          "memory/memory.usage_in_bytes": "500000000\n"}, None, 1.5e9),
        # a cgroup already at its limit: nothing can be had
        ({"memory.max": "1000\n", "memory.current": "4000\n"}, None, 1),
    ],
)  # fmt: skip
def test_the_cgroup_limit_less_its_use_bounds_the_limit(monkeypatch, tmp_path, files, own, room):
    validation = _machine(
        monkeypatch, tmp_path, available_kb=10_000_000, cgroup=files, self_cgroup=own
    )
    assert validation.memory_limit() == room


@needs_address_space
def test_the_command_line_refuses_what_is_not_available_in_one_line() -> None:
    # 10**9 resamples (8 GB of resample means) under a 2 GiB address-space limit: the
    # core's own check (which reads the machine itself, not through Python) refuses it
    # in one line naming the flag, exit 1
    examples = Path(__file__).resolve().parents[2] / "examples"
    code = f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP}))
        from truescore_fast.cli import main
        sys.exit(main(["compare", {str(examples / "compare_example.csv")!r}, "--a-column",
                       "system_a", "--b-column", "system_b", "--resamples", "1000000000"]))
    """
    proc = run_python(code)
    assert proc.returncode == 1, proc.stderr[-2000:]
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: --resamples needs 8.0 GB of memory, more than the 2.1 GB"), line
    assert line.endswith("use a smaller --resamples"), line


@needs_address_space
def test_an_allocation_failing_under_the_address_space_limit_is_a_size_error() -> None:
    # The check passes (the array fits the limit) but the allocation fails (the process
    # already maps most of it): the binding's MemoryError is a SizeError naming the
    # argument, not pybind11's RuntimeError "MISMATCH ... MemoryError REPLACED BY SizeError"
    code = """
    import resource, numpy as np, truescore_fast as tf
    from truescore_fast._validation import SizeError
    a = np.linspace(0, 1, 50)
    status = open("/proc/self/status").read().splitlines()
    vm = next(int(line.split()[1]) for line in status if line.startswith("VmSize")) * 1024
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (vm + (1 << 30), hard))
    try:  # 1.5e8 resample means: 1.2 GB, under the limit but over the 1 GiB left to map
        tf._core.bootstrap_means(a, 150_000_000, 1, 2, n_threads=1)
        print("allocated")
    except SizeError as error:
        print("SizeError", str(error).splitlines()[0][:60])
    """
    proc = run_python(code, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("SizeError n_bootstrap needs 1.2 GB"), (
        proc.stdout,
        proc.stderr[-2000:],
    )
