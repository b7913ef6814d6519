"""Many shards in one call, ``contamination/batch.py`` (``exchangeability_tests``): the dense,
ragged and single kernels against tests/reference.py, equal to single calls, inputs read in
place (also zero-stride ones), the GIL released, errors whatever the thread count, and
finite z-scores at the edges."""

from __future__ import annotations

import math

import numpy as np
import pytest
import truescore_fast as tf
from common import mc_se, same_bits, shards
from fuzzing import assert_sane_rank_test, wide_float
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import (
    ref_rank_test,
    ref_rank_tests_rows,
    ref_row_means,
)
from truescore_fast import _core

N_NULL = 4000  # null replications for every rate check


N_SE = 4.0  # tolerance, in Monte Carlo standard errors


@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1])
def test_false_positive_rate_matches_alpha_batched(alpha):
    rng = np.random.default_rng(7)
    m = 199
    values = rng.standard_normal((N_NULL, m + 1))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:], alpha=alpha)
    rate = float(np.mean(res.contaminated))
    # The verdict is p < 1 - level with level = 1 - alpha (as in truescore), and
    # 1 - (1 - alpha) is not always alpha in floating point (0.01 -> 0.010000000000000009),
    # so the exact rejection rate is counted on the grid with that threshold.
    grid = np.arange(1, m + 2) / (m + 1.0)
    exact = float(np.sum(grid < 1.0 - (1.0 - alpha))) / (m + 1)
    assert exact <= alpha
    assert abs(rate - exact) <= N_SE * mc_se(exact, N_NULL)
    assert abs(rate - alpha) <= N_SE * mc_se(alpha, N_NULL)


# ---------------------------------------------------------------------------------------
# Kernels against the NumPy reference
# ---------------------------------------------------------------------------------------

SIZES = [0, 1, 7, 1000]


def _assert_matches_reference(out, ref):
    assert np.array_equal(out["count"], ref["count"])
    assert out["count"].dtype == np.int64
    for key in ("p_value", "mean", "sd", "z_score"):
        assert same_bits(out[key], ref[key]), key


@pytest.mark.parametrize("n_shards", SIZES)
@pytest.mark.parametrize("m", [1, 7, 1000])
@pytest.mark.parametrize("ties", [False, True])
def test_dense_kernel_equals_reference(n_shards, m, ties):
    rng = np.random.default_rng(1000 * n_shards + m + ties)
    canonical, rows = shards(rng, n_shards, [m], ties=ties)
    dense = np.array(rows, dtype=np.float64).reshape(n_shards, m)
    ref = ref_rank_tests_rows(canonical, rows)
    outs = [_core.rank_tests_dense(canonical, dense, n_threads=t) for t in (1, 2, None, 3)]
    for out in outs:
        _assert_matches_reference(out, ref)
    for out in outs[1:]:  # thread counts bitwise identical
        for key in out:
            assert np.array_equal(out[key].view(np.int64), outs[0][key].view(np.int64))


@pytest.mark.parametrize("n_shards", SIZES)
@pytest.mark.parametrize("ties", [False, True])
def test_ragged_kernel_equals_reference(n_shards, ties):
    rng = np.random.default_rng(5000 + n_shards + ties)
    canonical, rows = shards(rng, n_shards, [1, 2, 7, 8, 9, 127, 128, 129, 1000], ties=ties)
    lengths = [len(r) for r in rows]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = np.concatenate(rows) if rows else np.zeros(0)
    ref = ref_rank_tests_rows(canonical, rows)
    outs = [_core.rank_tests_ragged(canonical, values, offsets, n_threads=t) for t in (1, 2)]
    for out in outs:
        _assert_matches_reference(out, ref)
    for key in outs[0]:
        assert np.array_equal(outs[0][key].view(np.int64), outs[1][key].view(np.int64))
    means = [_core.row_means_ragged(values, offsets, n_threads=t) for t in (1, 2)]
    assert same_bits(means[0], ref_row_means(rows))
    assert same_bits(means[0], means[1])


@pytest.fixture
def rank_paths():
    """The rank tests' kernels this CPU runs, each switched on in turn by a callable; the
    best is restored after. Names as _core.testing.rank_vector_path gives them."""
    testing = _core.testing
    best_level = testing.simd_level(3)
    features = testing.cpu_features(False)
    levels = {"plain": 0, "sse2": 1, "avx": 2, "avx512": 3}

    def use(path: str) -> None:
        testing.simd_level(levels[path])
        assert testing.rank_vector_path() == path

    paths = [path for path, level in levels.items() if level <= best_level]
    if features["avx512f"] and features["popcnt"]:
        assert "avx512" in paths  # the AVX-512 kernel runs wherever the CPU has it
    if features["avx"]:
        assert "avx" in paths
    yield paths, use
    testing.simd_level(best_level)


def test_every_vector_path_and_thread_count_gives_the_same_bits(rank_paths):
    """The plain, SSE2, AVX and AVX-512 kernels keep NumPy's eight accumulators in lanes:
    on rows of every length around the leaves' edges (8, 128, the splits above) and the
    thread counts 1, 2 and 3 they give NumPy's numbers (the reference) bit for bit."""
    paths, use = rank_paths
    rng = np.random.default_rng(37)
    lengths = [1, 2, 7, 8, 9, 15, 16, 17, 120, 127, 128, 129, 130, 135, 255, 256, 257, 999, 1000]
    lengths += [1023, 1024, 1025, 4097]
    rows, canonical = [], []
    for k, m in enumerate(lengths * 2):
        scale = 10.0 ** rng.uniform(-6, 6)
        row = rng.normal(-2000.0, 30.0, size=m)
        if k % 2:
            row = np.round(row / 5.0) * 5.0  # ties
        rows.append(row * scale + rng.normal() * 1e3)
        # a third of the canonical values equal a permuted one (the >= boundary)
        canonical.append(rows[-1][m // 2] if k % 3 == 0 else rng.normal(-2000.0, 30.0) * scale)
    canonical = np.array(canonical)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int64)
    values = np.concatenate(rows)
    dense = rng.normal(-4000.0, 30.0, size=(300, 999))
    dense_canonical = dense[:, 5] + rng.normal(size=300)
    ref = ref_rank_tests_rows(canonical, rows)
    dense_ref = ref_rank_tests_rows(dense_canonical, list(dense))
    for path in paths:
        use(path)
        for threads in (1, 2, 3):
            _assert_matches_reference(
                _core.rank_tests_ragged(canonical, values, offsets, n_threads=threads), ref
            )
            _assert_matches_reference(
                _core.rank_tests_dense(dense_canonical, dense, n_threads=threads), dense_ref
            )
        for k in range(0, len(rows), 7):
            one = tf.exchangeability_test(canonical[k], rows[k])
            assert same_bits(one.p_value, ref["p_value"][k])
            assert same_bits(one.permutation_std, ref["sd"][k])


@pytest.mark.parametrize("m", [1, 2, 7, 8, 9, 16, 127, 128, 129, 1000, 8193])
def test_single_kernel_equals_reference(m):
    rng = np.random.default_rng(m)
    for trial in range(20):
        x = rng.normal(-1e4, 10.0 ** rng.uniform(-3, 3), size=m)
        c = float(x[0]) if trial % 3 == 0 else float(rng.normal(-1e4, 5.0))
        p, mean, sd, z = _core.rank_test(c, x)
        ref = ref_rank_test(c, x)
        assert same_bits(
            [p, mean, sd, z], [ref["p_value"], ref["mean"], ref["sd"], ref["z_score"]]
        )


@pytest.mark.parametrize("n_shards", [1, 7, 1000])
def test_public_batch_equals_single_calls_and_reference(n_shards):
    rng = np.random.default_rng(n_shards)
    canonical, rows = shards(rng, n_shards, [1, 3, 50], ties=True)
    offsets = np.concatenate([[0], np.cumsum([len(r) for r in rows])])
    res = tf.exchangeability_tests(canonical, np.concatenate(rows), offsets=offsets)
    ref = ref_rank_tests_rows(canonical, rows)
    assert np.array_equal(res.counts, ref["count"])
    assert same_bits(res.p_values, ref["p_value"])
    assert same_bits(res.means, ref["mean"])
    assert same_bits(res.sds, ref["sd"])
    assert same_bits(res.z_scores, ref["z_score"])
    assert np.array_equal(res.n_permutations, [len(r) for r in rows])
    assert same_bits(res.resolutions, [1.0 / (len(r) + 1) for r in rows])
    assert len(res) == n_shards
    for i in range(0, n_shards, max(1, n_shards // 10)):
        assert res.shard(i) == tf.exchangeability_test(canonical[i], rows[i])


def test_converted_inputs_equal_float64_contiguous():
    rng = np.random.default_rng(42)
    base = rng.normal(-100.0, 3.0, size=(40, 30))
    canonical = rng.normal(-100.0, 3.0, size=40)
    expected = tf.exchangeability_tests(canonical, base)

    def check(c, p, **kw):
        got = tf.exchangeability_tests(c, p, **kw)
        for field in ("p_values", "counts", "means", "sds", "z_scores", "canonical"):
            assert np.array_equal(getattr(got, field), getattr(expected, field)), field

    check(canonical.tolist(), base.tolist())
    check(canonical, np.asfortranarray(base))
    wide = np.zeros((40, 60))
    wide[:, ::2] = base
    check(canonical, wide[:, ::2])  # non-contiguous view
    check(canonical[::-1][::-1].copy(), base[::-1][::-1])  # negative strides

    f32 = base.astype(np.float32)
    ints = np.rint(base).astype(np.int64)
    for converted in (f32, ints, ints.astype(np.int32)):
        got = tf.exchangeability_tests(canonical, converted)
        ref = ref_rank_tests_rows(canonical, list(converted.astype(np.float64)))
        _assert_matches_reference(
            {
                "count": got.counts,
                "p_value": got.p_values,
                "mean": got.means,
                "sd": got.sds,
                "z_score": got.z_scores,
            },
            ref,
        )
        single = tf.exchangeability_test(canonical[3], converted[3])
        assert single == got.shard(3)
        assert tf.exchangeability_test(canonical[3], converted[3].tolist()) == single

    # Ragged with float32 values and int32 offsets.
    offsets = np.arange(0, 40 * 30 + 1, 30, dtype=np.int32)
    got = tf.exchangeability_tests(canonical, f32.ravel(), offsets=offsets)
    assert np.array_equal(got.means, tf.exchangeability_tests(canonical, f32).means)


def _peak_bytes(call) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_dense_float64_input_is_read_in_place():
    # NumPy reports its buffers to tracemalloc, so a converted copy of the input shows
    # in the peak. C-contiguous float64 (8 MB here) must not be copied; float32 input
    # must be converted exactly once (which also shows the check can see a copy).
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1000, 999))
    canonical = np.zeros(1000)
    in_place = _peak_bytes(lambda: tf.exchangeability_tests(canonical, x))
    assert in_place < x.nbytes / 20, in_place
    x32 = x.astype(np.float32)
    converted = _peak_bytes(lambda: tf.exchangeability_tests(canonical, x32))
    assert x.nbytes <= converted < 2.5 * x.nbytes, converted


def test_batch_releases_the_gil():
    # While the core works on a large batch in another thread (3 * 10^6 rows: about 0.9 s
    # of CPU), this thread runs a Python loop of about 0.04 s of CPU. With the GIL
    # released, the loop ends while the call still runs, on any machine under any load
    # (the two threads share the CPU fairly: the loop needs a twentieth of the call's
    # time). Were the GIL held, this thread could run only in the switch intervals (5 ms)
    # at the call's two ends, and the loop would end after the call. An event decides,
    # not the wall clock: whether the call had finished when the loop ended.
    import threading

    rng = np.random.default_rng(2)
    rows = 3 * 10**6
    x = np.broadcast_to(rng.standard_normal(999), (rows, 999))  # one row, seen rows times
    canonical = rng.standard_normal(rows)
    entered, done = threading.Event(), threading.Event()

    def work() -> None:
        entered.set()
        tf.exchangeability_tests(canonical, x, n_threads=1)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    entered.wait()
    for _ in range(15 * 10**5):
        pass
    call_still_running = not done.is_set()
    worker.join()
    assert call_still_running


# ---------------------------------------------------------------------------------------
# Errors: ValueError naming the argument
# ---------------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("canonical", "permuted", "kwargs", "name"),
    [
        ([], np.zeros((0, 3)), {}, "canonical"),
        ([[0.0]], [[1.0]], {}, "canonical"),
        ([NAN], [[1.0]], {}, "canonical"),
        ([INF, 0.0], [[1.0], [2.0]], {}, "canonical"),
        ([0.0], [1.0], {}, "permuted"),
        ([0.0], np.zeros((1, 1, 1)), {}, "permuted"),
        ([0.0, 1.0], [[1.0, 2.0]], {}, "permuted"),
        ([0.0], np.zeros((1, 0)), {}, "permuted"),
        ([0.0, 1.0], [[1.0], [NAN]], {}, "permuted"),
        ([0.0], [[INF, 1.0]], {}, "permuted"),
        ([0.0], [[1.0]], {"offsets": [0, 1]}, "permuted"),
        ([0.0], [1.0, NAN], {"offsets": [0, 2]}, "permuted"),
        ([0.0, 1.0], [1.0, 2.0], {"offsets": [0, 1]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [1, 2]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [0, 1]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [0, 3]}, "offsets"),
        ([0.0, 1.0], [1.0, 2.0], {"offsets": [0, 0, 2]}, "offsets"),
        ([0.0, 1.0], [1.0, 2.0], {"offsets": [0, 3, 2]}, "offsets"),
        ([0.0, 1.0], [1.0, 2.0], {"offsets": [0, -1, 2]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [0.0, 2.0]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": [[0, 2]]}, "offsets"),
        ([0.0], [1.0, 2.0], {"offsets": np.array([0, 2**64 - 1], dtype=np.uint64)}, "offsets"),
        ([0.0], [[1.0]], {"n_threads": 0}, "n_threads"),
        ([0.0], [[1.0]], {"n_threads": -1}, "n_threads"),
        ([0.0], [[1.0]], {"n_threads": 1.5}, "n_threads"),
        ([0.0], [[1.0]], {"n_threads": True}, "n_threads"),
        ([0.0], [[1.0]], {"n_threads": "2"}, "n_threads"),
    ],
)
def test_exchangeability_tests_errors(canonical, permuted, kwargs, name):
    with pytest.raises(ValueError, match=name):
        tf.exchangeability_tests(canonical, permuted, **kwargs)


@pytest.mark.parametrize(
    ("canonical", "permuted", "name"),
    [
        ([0.0], [["a"]], "permuted"),
        ([1j], [[1.0]], "canonical"),
        ([0.0], np.array([[1.0 + 2j]]), "permuted"),
    ],
)
def test_exchangeability_tests_non_real_input_is_a_type_error(canonical, permuted, name):
    with pytest.raises(TypeError, match=name):
        tf.exchangeability_tests(canonical, permuted)


def test_core_kernel_errors():
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_test(0.0, np.zeros(0))
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_test(0.0, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_test(0.0, np.array([1.0, NAN]))
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_tests_dense(np.zeros(2), np.zeros((3, 2)))
    with pytest.raises(ValueError, match="permuted"):
        _core.rank_tests_dense(np.zeros(1), np.zeros((1, 0)))
    with pytest.raises(ValueError, match="offsets"):
        _core.rank_tests_ragged(np.zeros(1), np.zeros(2), np.array([0, 1]))
    with pytest.raises(ValueError, match="offsets"):
        _core.row_means_ragged(np.zeros(2), np.array([0, 0, 2]))
    with pytest.raises(ValueError, match="offsets"):
        _core.row_means_ragged(np.zeros(2), np.zeros(0, dtype=np.int64))
    with pytest.raises(ValueError, match="shuffled"):
        _core.row_means_ragged(np.array([1.0, INF]), np.array([0, 2]))
    with pytest.raises(ValueError, match="n_threads"):
        _core.rank_tests_dense(np.zeros(1), np.zeros((1, 1)), n_threads=0)


def test_first_bad_shard_is_reported_whatever_the_thread_count():
    values = np.zeros((1000, 3))
    values[700, 1] = NAN
    values[300, 2] = INF
    for threads in (1, 2, 4):
        with pytest.raises(ValueError, match=r"shard 300\b"):
            _core.rank_tests_dense(np.zeros(1000), values, n_threads=threads)


def test_combined_and_batch_summaries():
    rng = np.random.default_rng(0)
    values = rng.standard_normal((12, 50))
    res = tf.exchangeability_tests(values[:, 0], values[:, 1:])
    text = res.summary()
    assert "12 shards" in text and "49" in text and "Fisher" in text
    assert "expected by chance" in text
    for method in ("fisher", "stouffer", "average"):
        pooled = res.combine(method)
        s = pooled.summary()
        assert "12 shards" in s and "smallest shard p-value" in s
        assert ("no pooled finding" in s) == (not pooled.contaminated)
        if not pooled.contaminated:
            assert "not evidence of a clean model" in s
    strong = tf.combine_shards([1e-4] * 5)
    assert strong.contaminated and "finding: pooled evidence" in strong.explain()


# ---------------------------------------------------------------------------------------
# Property test: any input gives a finite result or a ValueError
# ---------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    n_shards=st.integers(0, 6),
    ragged=st.booleans(),
)
def test_property_batch(data, n_shards, ragged):
    canonical = data.draw(st.lists(wide_float, min_size=n_shards, max_size=n_shards))
    if ragged:
        lengths = data.draw(st.lists(st.integers(0, 6), min_size=n_shards, max_size=n_shards))
        values = data.draw(st.lists(wide_float, min_size=sum(lengths), max_size=sum(lengths)))
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        kwargs = {"offsets": offsets}
    else:
        m = data.draw(st.integers(0, 6))
        values = np.array(
            data.draw(st.lists(wide_float, min_size=n_shards * m, max_size=n_shards * m))
        ).reshape(n_shards, m)
        kwargs = {"offsets": None}
    try:
        res = tf.exchangeability_tests(canonical, values, **kwargs)
    except ValueError:
        return
    assert len(res) == n_shards > 0
    rows = (
        [values[offsets[i] : offsets[i + 1]] for i in range(n_shards)] if ragged else list(values)
    )
    for i in range(n_shards):
        assert_sane_rank_test(res.p_values[i], res.means[i], res.sds[i], res.z_scores[i], rows[i])
    for method in ("fisher", "stouffer", "average"):
        pooled = res.combine(method)
        assert 0.0 <= pooled.p_value <= 1.0 and not math.isnan(pooled.log_p_value)


def test_batched_exchangeability_z_is_finite_or_an_error() -> None:
    permuted = np.array([[-1.7e308, -1.6e308, -1.65e308], [0.0, 1.0, 2.0]])
    tests = tf.exchangeability_tests(np.array([1.7e308, 1.0]), permuted)
    assert np.isfinite(tests.z_scores).all() and tests.z_scores[0] > 60
    tiny = np.array([[0.0, 1e-150, 2e-150], [0.0, 1.0, 2.0]])
    tests = tf.exchangeability_tests(np.array([1e158, 1.0]), tiny)
    assert tests.z_scores[0] == pytest.approx(1e308, rel=1e-12)
    with pytest.raises(ValueError, match=r"canonical\[0\].*z overflows"):
        tf.exchangeability_tests(np.array([2e162, 1.0]), tiny)


def test_one_permutation_per_shard_has_z_zero() -> None:
    batch = tf.exchangeability_tests(np.array([1e-320, 2.0]), np.array([[3e-320], [1.0]]))
    assert list(batch.z_scores) == [0.0, 0.0]


def test_a_zero_stride_input_beyond_memory_is_refused_by_name_not_copied() -> None:
    row = np.linspace(-1, 1, 10**6)
    huge = np.broadcast_to(row, (10**7, 10**6))  # 80 TB if copied
    with pytest.raises(MemoryError, match=r"^d needs 80.0 TB of memory.*C-contiguous"):
        tf.betting_intervals(huge)
    with pytest.raises(MemoryError, match=r"^values needs"):
        tf.finite_population_bootstrap(np.broadcast_to(1.0, (2 * 10**13,)), population_size=None)


def test_dense_rank_tests_read_a_zero_stride_input_in_place() -> None:
    # 20,000 shards sharing one row of 1,000 permutations: read at row stride 0, never
    # copied; every shard's count is that of its canonical value against the row.
    rng = np.random.default_rng(5)
    row = rng.normal(size=1000)
    canonical = rng.normal(size=20000)
    got = tf.exchangeability_tests(canonical, np.broadcast_to(row, (20000, 1000)))
    counts = (row[None, :] >= canonical[:, None]).sum(axis=1)
    assert np.array_equal(got.counts, counts)
    assert np.array_equal(got.p_values, (1 + counts) / 1001)
    assert np.all(got.sds == np.std(row, ddof=1))
    strided = np.asfortranarray(rng.normal(size=(6, 50)))  # column-major: one checked copy
    got = tf.exchangeability_tests(np.zeros(6), strided)
    want = tf.exchangeability_tests(np.zeros(6), np.ascontiguousarray(strided))
    assert np.array_equal(got.sds, want.sds)
    sliced = rng.normal(size=(10, 80))[::2, 5:60]  # rows in place at twice the row stride
    got = tf.exchangeability_tests(np.zeros(5), sliced)
    want = tf.exchangeability_tests(np.zeros(5), sliced.copy())
    assert np.array_equal(got.means, want.means)
    assert np.array_equal(got.z_scores, want.z_scores)
