"""patch_truescore(): truescore's own code and CLI running on the compiled core."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import truescore
import truescore.cli
import truescore.compare
import truescore.contamination
import truescore.doctor
import truescore.slices
import truescore_fast
from truescore_fast.compare import paired as fast_compare
from truescore_fast.contamination import exact as fast_contamination
from truescore_fast.patch import is_patched, patch_truescore, unpatch_truescore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


ORIGINALS = {
    (module, name): getattr(module, name)
    for module in (
        truescore,
        truescore.compare,
        truescore.contamination,
        truescore.cli,
        truescore.slices,
        truescore.doctor,
    )
    for name in (
        "paired_bootstrap",
        "paired_permutation",
        "holm",
        "benjamini_hochberg",
        "ComparisonResult",
        "exchangeability_test",
        "combine_shards",
        "ContaminationResult",
        "CombinedContamination",
    )
    if hasattr(module, name)
}


@pytest.fixture(autouse=True)
def always_unpatched():
    unpatch_truescore()
    yield
    unpatch_truescore()


def ours(name):
    return getattr(fast_compare, name, None) or getattr(fast_contamination, name)


def test_patch_replaces_every_reference_and_unpatch_restores_them():
    patched = patch_truescore()
    assert is_patched()
    for (module, name), original in ORIGINALS.items():
        assert getattr(module, name) is ours(name), (module.__name__, name)
        assert f"{module.__name__}.{name}" in patched
        assert original is not ours(name)
    # names truescore_fast does not implement stay truescore's own
    assert truescore.compare.mcnemar.__module__ == "truescore.compare"
    unpatch_truescore()
    assert not is_patched()
    for (module, name), original in ORIGINALS.items():
        assert getattr(module, name) is original, (module.__name__, name)


def test_patch_is_idempotent_and_unpatch_is_safe_to_repeat():
    first = patch_truescore()
    assert first and patch_truescore() == []
    assert truescore.holm is truescore_fast.holm
    unpatch_truescore()
    unpatch_truescore()
    assert truescore.holm is ORIGINALS[(truescore, "holm")]
    assert patch_truescore() == first  # patching again after unpatching works the same


def test_truescore_internals_build_our_result_type_after_patch():
    patch_truescore()
    result = truescore.compare.mcnemar([1, 1, 0, 1, 0], [0, 1, 0, 0, 0])
    assert type(result) is truescore_fast.ComparisonResult
    assert result.n_discordant == 2 and "disagree" in result.explain()
    unpatch_truescore()
    theirs = truescore.compare.mcnemar([1, 1, 0, 1, 0], [0, 1, 0, 0, 0])
    assert type(theirs) is not truescore_fast.ComparisonResult
    assert result.summary() == theirs.summary()  # truescore's text, word for word


def test_user_script_runs_unchanged_with_identical_deterministic_results():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=9), rng.normal(size=9)
    p = rng.random(12)
    script = lambda: (  # noqa: E731 - a "user script" written against truescore
        truescore.paired_permutation(a, b).p_value,
        truescore.holm(p).tolist(),
        truescore.benjamini_hochberg(p).tolist(),
        truescore.exchangeability_test(1.0, rng_values()).p_value,
    )
    before = script()
    patch_truescore()
    assert script() == before


def rng_values():
    return np.random.default_rng(3).normal(size=199)


def test_missing_truescore_is_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "truescore", None)
    with pytest.raises(ImportError, match="needs truescore installed"):
        patch_truescore()


# --- truescore's own command line, before and after -------------------------------------


def run_cli(argv, capsys):
    code = truescore.cli.main(argv)
    captured = capsys.readouterr()
    findings = [line for line in captured.out.splitlines() if line.startswith("FINDING")]
    return code, findings, captured.out


@pytest.fixture
def core_calls(monkeypatch):
    """How many times each function of the compiled core was called, by name."""
    from truescore_fast import _core

    counts = {}

    def counting(name, function):
        def wrapper(*args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            return function(*args, **kwargs)

        return wrapper

    for name in dir(_core):
        value = getattr(_core, name)
        if type(value).__name__ == "builtin_function_or_method":
            monkeypatch.setattr(_core, name, counting(name, value))
    return counts


def both_ways(argv, capsys, core_calls=None):
    """The CLI run unpatched, then patched; with ``core_calls``, only the patched run may
    (and must) call the compiled core."""
    before = run_cli(argv, capsys)
    assert not core_calls, "unpatched truescore reached truescore_fast's core"
    patch_truescore()
    after = run_cli(argv, capsys)
    unpatch_truescore()
    assert core_calls is None or core_calls, "patched truescore did not reach the core"
    return before, after


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["contamination", str(EXAMPLES / "contamination_clean.csv")], 0),
        (
            [
                "contamination",
                str(EXAMPLES / "contamination_sharded.csv"),
                "--shard-column",
                "shard",
            ],
            2,
        ),
    ],
)
def test_contamination_cli_same_output(argv, expected, capsys, core_calls):
    (code0, _, out0), (code1, _, out1) = both_ways(argv, capsys, core_calls)
    assert code0 == code1 == expected
    assert out0 == out1  # deterministic results and summary() text: identical


def write_pairs(path, rng, n, p_a, p_b, n_items, gold=False, x_drop=0.3):
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "a", "b", "item", "ga", "gb", "segment"])
        for i in range(n):
            segment = "xyz"[rng.integers(3)]
            truth_a = int(rng.random() < p_a)
            truth_b = int(rng.random() < (p_b - x_drop if segment == "x" else p_b))
            judge_a = truth_a if rng.random() < 0.9 else 1 - truth_a
            judge_b = truth_b if rng.random() < 0.9 else 1 - truth_b
            labeled = gold and (i % n_items) % 3 == 0  # whole items labeled
            writer.writerow(
                [
                    i,
                    judge_a,
                    judge_b,
                    f"q{i % n_items}",
                    truth_a if labeled else "",
                    truth_b if labeled else "",
                    segment,
                ]
            )
    return str(path)


@pytest.mark.parametrize(
    "name, p_a, p_b, gold, expected",
    [
        ("regression", 0.85, 0.6, False, 2),
        ("noise", 0.7, 0.7, False, 0),
        ("corrected", 0.8, 0.8, True, 2),
    ],
)
def test_compare_cli_same_findings_with_clusters(
    tmp_path, capsys, core_calls, name, p_a, p_b, gold, expected
):
    rng = np.random.default_rng(len(name))
    path = write_pairs(
        tmp_path / f"{name}.csv",
        rng,
        900,
        p_a,
        p_b,
        150,
        gold,
        x_drop=0.0 if name == "noise" else 0.3,
    )
    argv = ["compare", path, "--judge-a", "a", "--judge-b", "b", "--cluster-column", "item"]
    if gold:
        argv += ["--gold-a", "ga", "--gold-b", "gb"]
    (code0, findings0, out0), (code1, findings1, out1) = both_ways(argv, capsys, core_calls)
    assert code0 == code1 == expected
    assert findings0 == findings1
    assert "bootstrap" in out0 and "bootstrap" in out1


def test_compare_cli_errors_exit_1_both_ways(tmp_path, capsys):
    path = write_pairs(tmp_path / "x.csv", np.random.default_rng(1), 60, 0.7, 0.6, 10)
    argv = ["compare", path, "--judge-a", "a", "--judge-b", "b", "--cluster-column", "nope"]
    (code0, _, _), (code1, _, _) = both_ways(argv, capsys)
    assert code0 == code1 == 1


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_slices_cli_output_identical(tmp_path, capsys, correction):
    path = write_pairs(tmp_path / "s.csv", np.random.default_rng(4), 900, 0.8, 0.8, 150, True)
    argv = [
        "slices",
        path,
        "--by",
        "segment",
        "--judge-a",
        "a",
        "--gold-a",
        "ga",
        "--judge-b",
        "b",
        "--gold-b",
        "gb",
        "--correction",
        correction,
    ]
    (code0, _, out0), (code1, _, out1) = both_ways(argv, capsys)
    assert code0 == code1
    assert "adj p=" in out0 and out0 == out1  # holm / BH identical, so every digit matches


@pytest.mark.slow
def test_patched_truescore_command_in_a_fresh_process(tmp_path):
    path = write_pairs(tmp_path / "r.csv", np.random.default_rng(2), 600, 0.85, 0.6, 100)
    code = (
        "import sys, truescore_fast; truescore_fast.patch_truescore(); "
        "import truescore.cli as cli; print(cli.paired_bootstrap.__module__, file=sys.stderr); "
        "sys.exit(cli.main(sys.argv[1:]))"
    )
    argv = ["compare", path, "--judge-a", "a", "--judge-b", "b", "--cluster-column", "item"]
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2, done.stderr
    assert "FINDING: a real difference" in done.stdout
    assert done.stderr.strip() == "truescore_fast.compare.paired"  # the CLI ran on ours
