"""The betting confidence sequence against confseq (issue 37).

confseq (Waudby-Smith & Ramdas's own package) computes the sequence for every t at once on
a grid of candidate means (``breaks=1000``), so one of its calls answers both questions an
audit asks. Two groups, n = 1,000 gaps (public 0.7, fresh 0.62, two fresh forms), with
replacement, horizon-free, alpha = 0.05:

- "sequence after every parent": 1,000 single-parent ``SequentialAudit.update`` calls
  (each reads Delta's sequence at alpha and at alpha / 2, tau and a decision) against ONE
  ``confseq.betting.betting_cs`` call over all 1,000 (its sequence at every t). Goal:
  ours >= 10x faster.
- "one reading": ``betting_confidence_sequence`` of the 1,000 gaps against one
  ``betting_cs`` call and one ``hedged_cs`` call. Goal: >= 20x faster.

The sequences are not the same sequence (ours mixes seven capital processes, searches each
end to 1e-14 and reads it outward; confseq's bets one process with truncation 1/2 and
reads a grid of 1,000 candidates): each benchmark checks that the two agree to within a
few hundredths, as the guide's width tables say they should.

confseq is optional: its sdist builds a C++ extension (Boost's headers, and a pybind11 of
its own that no longer builds on Python >= 3.11 in pip's isolated build, so .ci/run builds
it with --no-build-isolation), and 0.0.11 still uses ``np.float_``, removed in NumPy 2
(aliased to float64 below before the import). Where it cannot be imported the benchmarks
skip, saying why.
"""

from __future__ import annotations

import numpy as np
import pytest
import truescore_fast as tf

N = 1000


def _confseq():
    vars(np).setdefault("float_", np.float64)  # confseq 0.0.11 under NumPy 2
    try:
        from confseq import betting
    except Exception as error:  # noqa: BLE001 - any import failure means no baseline
        pytest.skip(
            f"confseq is not importable ({type(error).__name__}: {error}); install it as "
            ".ci/run does (libboost-dev, then pip install --no-build-isolation confseq)"
        )
    return betting


@pytest.fixture(scope="module")
def parents():
    rng = np.random.default_rng(37)
    public = (rng.random(N) < 0.7).astype(float)
    fresh = (rng.random((N, 2)) < 0.62).astype(float)
    d = public - fresh.mean(axis=1)
    return public, fresh, d, (d + 1.0) / 2.0


@pytest.mark.benchmark(group="sequence after every parent, n = 1,000")
def test_updates_after_every_parent(benchmark, parents, record_role):
    record_role("ours", "1,000 single-parent SequentialAudit.update calls")
    public, fresh, d, _ = parents

    def run():
        audit = tf.SequentialAudit(horizon=None)
        for i in range(N):
            state = audit.update(public[i], fresh[i])
        return state

    state = benchmark.pedantic(run, rounds=10, warmup_rounds=1)
    final = tf.betting_confidence_sequence(d)
    # the incremental ends lie outward of the exact ones by at most 1/200 of the width
    slack = (final.high - final.low) / 200 + 1e-11
    assert final.low - slack <= state.delta.low <= final.low
    assert final.high <= state.delta.high <= final.high + slack


@pytest.mark.benchmark(group="sequence after every parent, n = 1,000")
def test_confseq_betting_cs_for_every_t(benchmark, parents, record_role):
    betting = _confseq()
    record_role("baseline", "confseq betting_cs, one call for all t (the sequence at every t)")
    _, _, d, x = parents
    low, high = benchmark.pedantic(lambda: betting.betting_cs(x, alpha=0.05), rounds=5)
    assert low.shape == high.shape == (N,)
    ours = tf.betting_confidence_sequence(d)
    assert abs((2 * low[-1] - 1) - ours.low) < 0.03 and abs((2 * high[-1] - 1) - ours.high) < 0.03


@pytest.mark.benchmark(group="one reading of the sequence, n = 1,000")
def test_one_reading(benchmark, parents, record_role):
    record_role("ours", "betting_confidence_sequence of 1,000 gaps")
    _, _, d, _ = parents
    iv = benchmark(tf.betting_confidence_sequence, d)
    assert not iv.empty and iv.low < iv.estimate < iv.high


@pytest.mark.benchmark(group="one reading of the sequence, n = 1,000")
@pytest.mark.parametrize("method", ["betting_cs", "hedged_cs"])
def test_confseq_one_reading(benchmark, parents, record_role, method):
    betting = _confseq()
    record_role("baseline", f"confseq {method} (breaks = 1,000)")
    _, _, d, x = parents
    cs = getattr(betting, method)
    low, high = benchmark.pedantic(lambda: cs(x, alpha=0.05), rounds=5)
    ours = tf.betting_confidence_sequence(d)
    assert abs((2 * low[-1] - 1) - ours.low) < 0.03 and abs((2 * high[-1] - 1) - ours.high) < 0.03
