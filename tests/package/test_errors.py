"""One argument error (issue 38): Python's checks and the compiled core raise the same
classes (truescore_fast.errors), each carrying the name of the argument it refuses; the
core builds its memory errors and reads the machine's limit itself, with no call back into
Python, and Python's checks use the core's limit and words."""

from __future__ import annotations

import os
import pickle
import resource

import numpy as np
import pytest
import truescore_fast as tf
from common import run_python
from truescore_fast import _core
from truescore_fast import _validation as validation
from truescore_fast.errors import ArgumentError, ArgumentTypeError, SizeError, literal


def test_the_classes_are_the_errors_python_already_catches() -> None:
    assert issubclass(ArgumentError, ValueError)
    assert issubclass(ArgumentTypeError, ArgumentError) and issubclass(
        ArgumentTypeError, TypeError
    )
    assert issubclass(SizeError, ArgumentError) and issubclass(SizeError, MemoryError)
    assert tf.ArgumentError is ArgumentError and tf.SizeError is SizeError
    assert tf.ArgumentTypeError is ArgumentTypeError
    assert validation.SizeError is SizeError  # the name the tests of issue 23 import


def test_the_message_reads_as_before_and_a_template_renders_any_way() -> None:
    error = ArgumentError("alpha", "alpha must lie in (0, 1); got 2")
    assert (str(error), error.argument, error.template) == (
        "alpha must lie in (0, 1); got 2",
        "alpha",
        None,
    )
    assert error.render(str.upper) == "ALPHA must lie in (0, 1); got 2"
    # only the argument itself, as a whole word, is the name at the start
    assert ArgumentError("n", "nothing left").render(str.upper) == "nothing left"
    sized = SizeError("n", template="{n} x {m} of {{'a': 1}} " + literal("{x}"))
    assert str(sized) == "n x m of {'a': 1} {x}"
    assert sized.render(lambda name: f"--{name}") == "--n x --m of {'a': 1} {x}"
    with pytest.raises(TypeError):
        ArgumentError("n")


@pytest.mark.parametrize("cls", [ArgumentError, ArgumentTypeError, SizeError])
def test_an_argument_error_survives_pickling(cls) -> None:
    # a study's worker processes send their errors back pickled
    error = cls("n", template="{n} needs 8 GB; use a smaller {n}")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is cls
    assert (str(copy), copy.argument, copy.template) == (str(error), "n", error.template)


def test_python_checks_raise_it_naming_the_argument() -> None:
    with pytest.raises(ArgumentError) as caught:
        tf.matched_form_audit([0.0, 1.0], [[1.0], [0.0]], alpha=2.0)
    assert caught.value.argument == "alpha" and str(caught.value).startswith("alpha ")
    with pytest.raises(ArgumentTypeError) as typed:
        tf.matched_form_audit([0.0, 1.0], [[1.0], [0.0]], alpha="0.1")
    assert typed.value.argument == "alpha"


def test_the_drop_ins_raise_truescores_message_and_name_the_argument() -> None:
    truescore = pytest.importorskip("truescore")
    for name, kwargs in (
        ("holm", {"p_values": [0.5, 2.0]}),
        ("paired_bootstrap", {"a": [0.1, 0.2], "b": [0.3, 0.4], "alpha": 2.0}),
        ("exchangeability_test", {"canonical_loglik": 1.0, "permuted_logliks": []}),
    ):
        with pytest.raises(ValueError) as theirs:
            getattr(truescore, name)(**kwargs)
        with pytest.raises(ArgumentError) as ours:
            getattr(tf, name)(**kwargs)
        assert isinstance(ours.value, type(theirs.value)), name
        assert str(ours.value) == str(theirs.value), name
        assert ours.value.argument in str(ours.value), name


def test_the_core_raises_it_naming_the_argument() -> None:
    with pytest.raises(ArgumentError) as caught:
        _core.bootstrap_means(np.ones(3), 0, 1, 2, n_threads=1)
    assert caught.value.argument == "n_bootstrap"
    assert str(caught.value) == "n_bootstrap must be at least 1; got 0"
    with pytest.raises(ArgumentError) as threads:
        _core.bootstrap_means(np.ones(3), 5, 1, 2, n_threads=0)
    assert threads.value.argument == "n_threads"
    with pytest.raises(ArgumentError) as shape:
        _core.bootstrap_means(np.ones((2, 2)), 5, 1, 2)
    assert shape.value.argument == "diffs" and str(shape.value) == "diffs must be 1-D; got 2-D"


# ---- memory: one limit, one message, from either side -----------------------------------


def _reference_limit(meminfo: str, self_cgroup: str, root: str) -> int | None:
    """What the limit was when Python computed it (before issue 38), without the
    address-space limit: an independent reading to check the core's against."""

    def read_int(path: str) -> int | None:
        try:
            with open(path) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return None

    limits: list[int] = []
    with open(meminfo) as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                limits.append(int(line.split()[1]) * 1024)
    folders = [root]
    with open(self_cgroup) as f:
        for line in f:
            parts = line.strip().split(":", 2)
            if len(parts) == 3 and parts[2] not in ("", "/"):
                if parts[0] == "0" or "memory" in parts[1].split(","):
                    folders += [root + parts[2], f"{root}/memory{parts[2]}"]
    v1 = ("memory.limit_in_bytes", "memory.usage_in_bytes")
    for folder in dict.fromkeys(folders):
        for limit_file, usage_file in (
            ("memory.max", "memory.current"),
            v1,
            [f"memory/{f}" for f in v1],
        ):
            limit = read_int(f"{folder}/{limit_file}")
            if limit is not None and limit < 2**60:
                limits.append(limit - (read_int(f"{folder}/{usage_file}") or 0))
    return max(1, min(limits)) if limits else None


MACHINES = [
    ({}, "0::/\n"),
    ({"memory.max": "4000000000\n", "memory.current": "1000000000\n"}, "0::/\n"),
    ({"job/run.scope/memory.max": "6000000000\n", "job/run.scope/memory.current": "0\n"},
     "0::/job/run.scope\n"),
    ({"memory.max": "max\n", "memory.current": "5\n"}, "0::/\n"),
    ({"memory/memory.limit_in_bytes": "9223372036854771712\n"}, "0::/\n"),
    ({"memory/memory.limit_in_bytes": " 2000000000\n", "memory/memory.usage_in_bytes": "5e8\n"},
     "0::/\n"),
    ({"memory/a/memory.limit_in_bytes": "3000000000\n"}, "4:cpu:/b\n3:memory,blkio:/a\n"),
    ({"memory.max": "1000\n", "memory.current": "4000\n"}, "0::/\n"),
]  # fmt: skip


@pytest.mark.parametrize(("files", "own"), MACHINES)
def test_the_cores_limit_agrees_with_the_reference(tmp_path, files, own) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 25000000 kB\nMemAvailable: 10000000 kB\n")
    root = tmp_path / "cgroup"
    root.mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (tmp_path / "self").write_text(own)
    paths = {
        "meminfo": str(meminfo),
        "self_cgroup": str(tmp_path / "self"),
        "cgroup_root": str(root),
    }
    expected = _reference_limit(*paths.values())
    assert _core.memory_limit(**paths, address_space=False) == expected
    # and Python's memory_limit is the core's, reading the files it is pointed at
    for name, attribute in (("meminfo", "_MEMINFO"), ("self_cgroup", "_SELF_CGROUP"),
                            ("cgroup_root", "_CGROUP_ROOT")):  # fmt: skip
        setattr(validation, attribute, paths[name])
    try:
        validation._ADDRESS_SPACE = False
        assert validation.memory_limit() == expected
    finally:
        validation._MEMINFO, validation._SELF_CGROUP = "/proc/meminfo", "/proc/self/cgroup"
        validation._CGROUP_ROOT, validation._ADDRESS_SPACE = "/sys/fs/cgroup", True


def test_the_address_space_limit_bounds_the_limit() -> None:
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    limit = _core.memory_limit()
    assert limit is not None and limit >= 1
    if soft != resource.RLIM_INFINITY:
        assert limit <= soft


def _reference_bytes(nbytes: float) -> str:
    if not nbytes < 1e3:
        for unit, size in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
            if nbytes >= size:
                return f"{nbytes / size:,.1f} {unit}"
        return f"{nbytes / 1e3:.1f} kB"
    return f"{int(nbytes)} bytes"


def test_format_bytes_agrees_with_pythons_formatting() -> None:
    rng = np.random.default_rng(38)
    values = [0.0, 999.0, 999.9, 1000.0, 999_949.0, 999_950.0, 1e6, 2.5e21, 1e30, 123456789e18]
    values += list(10.0 ** rng.uniform(0, 25, 2000)) + [
        float(v) for v in rng.integers(0, 10**6, 500)
    ]
    for v in values:
        assert _core.format_bytes(v) == _reference_bytes(v), v


def test_the_memory_error_names_its_argument_and_the_advice_renders_as_flags() -> None:
    error = validation.memory_error("n_bootstrap", 80e9)
    assert isinstance(error, SizeError) and error.argument == "n_bootstrap"
    assert str(error).startswith("n_bootstrap needs 80.0 GB of memory, more than ")
    assert str(error).endswith("; use a smaller n_bootstrap")
    assert error.render(lambda n: f"--{n}").endswith("; use a smaller --n_bootstrap")
    product = _core.memory_error("n_shards x max_permutations", 8e12, "use fewer {n_shards}", None)
    assert str(product) == (
        "n_shards x max_permutations needs 8.0 TB of memory, more than can be had; "
        "use fewer n_shards"
    )
    assert product.argument == "n_shards"
    assert product.render(str.upper) == (
        "N_SHARDS x MAX_PERMUTATIONS needs 8.0 TB of memory, more than can be had; "
        "use fewer N_SHARDS"
    )
    path = _core.memory_error("/tmp/{a}.csv", 8e12, "split it", 2_000_000_000)
    assert (
        str(path)
        == "/tmp/{a}.csv needs 8.0 TB of memory, more than the 2.0 GB available; split it"
    )


@pytest.mark.skipif(
    not hasattr(resource, "RLIMIT_AS") or "LD_PRELOAD" in os.environ,
    reason="needs an address-space limit (not under AddressSanitizer)",
)
def test_memory_errors_from_the_core_and_from_python_read_the_same() -> None:
    # under a 2 GiB address-space limit (so both sides read one and the same limit), the
    # core's own check and Python's for the same size give the same error
    code = """
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))
    import numpy as np
    from truescore_fast import _core
    from truescore_fast._validation import SizeError, check_size
    seen = []
    for raise_it in (lambda: _core.bootstrap_means(np.ones(5), 10**12, 1, 2, n_threads=1),
                     lambda: check_size("n_bootstrap", 10**12, 8.0)):
        try:
            raise_it()
        except SizeError as error:
            seen.append((type(error).__name__, error.argument, error.template, str(error)))
    assert len(seen) == 2 and seen[0] == seen[1], seen
    print(seen[0][3])
    """
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("n_bootstrap needs 8.0 TB of memory, more than the 2.1 GB")


def test_the_core_does_not_import_the_validation_module() -> None:
    # the hidden loop is gone: with the Python checks made unimportable, the core still
    # builds its memory error
    code = """
    import sys, numpy as np
    from truescore_fast import _core
    sys.modules["truescore_fast._validation"] = None  # importing it now fails
    from truescore_fast.errors import SizeError
    try:
        _core.bootstrap_means(np.ones(5), 10**17, 1, 2, n_threads=1)
    except SizeError as error:
        print(error.argument, type(error).__name__)
    """
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["n_bootstrap", "SizeError"]
