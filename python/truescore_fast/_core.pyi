# Stub of the compiled module truescore_fast._core (kept in sync by tests/package/test_stub.py).
# Internal: use the truescore_fast package's public functions instead.

from types import ModuleType
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from truescore_fast.errors import SizeError

__version__: str  # pyproject.toml's version, compiled in

def default_threads() -> int: ...  # threads for n_threads=None: the usable CPUs
def resolve_threads(n_threads: int) -> int: ...  # 0: default_threads(); else capped at 4 per CPU

MAX_EXACT_PAIRS: int

def bootstrap_means(
    diffs: npt.ArrayLike, n_bootstrap: int, key0: int, key1: int, *, n_threads: int | None = None
) -> npt.NDArray[np.float64]: ...
def cluster_bootstrap_means(
    sums: npt.ArrayLike,
    sizes: npt.ArrayLike,
    n_bootstrap: int,
    key0: int,
    key1: int,
    *,
    n_threads: int | None = None,
) -> npt.NDArray[np.float64]: ...
def bootstrap_means_discrete(
    values: npt.ArrayLike,
    counts: npt.ArrayLike,
    n_bootstrap: int,
    key0: int,
    key1: int,
    *,
    n_threads: int | None = None,
) -> npt.NDArray[np.float64]: ...
def rank_test(canonical: float, permuted: npt.ArrayLike) -> tuple[float, float, float, float]: ...
def rank_tests_dense(
    canonical: npt.ArrayLike, permuted: npt.ArrayLike, *, n_threads: int | None = None
) -> dict[str, npt.NDArray[Any]]: ...
def rank_tests_ragged(
    canonical: npt.ArrayLike,
    values: npt.ArrayLike,
    offsets: npt.ArrayLike,
    *,
    n_threads: int | None = None,
) -> dict[str, npt.NDArray[Any]]: ...
def row_means_ragged(
    values: npt.ArrayLike, offsets: npt.ArrayLike, *, n_threads: int | None = None
) -> npt.NDArray[np.float64]: ...
def fisher_log_sf(statistic: float, n_shards: int) -> float: ...

# intervals: the registry of interval methods (src/cpp/truescore/intervals.hpp)
class IntervalMethod:
    """Interval methods of the matched-form audit; the value is the method's code."""

    hoeffding: ClassVar[IntervalMethod]
    bernstein: ClassVar[IntervalMethod]
    wald: ClassVar[IntervalMethod]
    hoeffding_serfling: ClassVar[IntervalMethod]
    betting: ClassVar[IntervalMethod]
    __members__: ClassVar[dict[str, IntervalMethod]]
    def __init__(self, value: int) -> None: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

FEASIBLE_SLACK: float
CONSTAT_MIN_REFERENCE_MODELS: int
CONSTAT_MAX_ATTEMPTS: int

def interval_method_traits() -> dict[str, dict[str, Any]]: ...
def gap_interval_unchecked(
    d: object, method: int, population_size: float, alpha: float
) -> tuple[float, float, float, float] | None: ...
def gap_intervals_unchecked(
    d: object, methods: tuple[int, ...], population_size: float, alphas: tuple[float, ...]
) -> list[tuple[float, float, float, float]] | None: ...
def matched_form_gaps(
    public: object, fresh: object
) -> tuple[npt.NDArray[np.float64], int, float, float, float] | None: ...

class ConfidenceSequence:
    def __init__(self, population_size: int | None, alpha: float, horizon: int | None) -> None: ...
    def extend(self, x: npt.ArrayLike) -> None: ...
    def bounds(self) -> tuple[float, float, bool]: ...
    def exact_bounds(self) -> tuple[float, float, bool]: ...
    @property
    def t(self) -> int: ...
    @property
    def work(self) -> int: ...
    @property
    def x(self) -> npt.NDArray[np.float64]: ...

class AuditStream:
    def __init__(
        self, population_size: int | None, alpha: float, horizon: int | None, cap: int | None
    ) -> None: ...
    def update(
        self, public: npt.ArrayLike, fresh_means: npt.ArrayLike, forms: int
    ) -> tuple[int, float, float, float, float, float, bool, float, float, bool]: ...
    def update_unchecked(
        self, public: object, fresh: object
    ) -> tuple[int, float, float, float, float, float, bool, float, float, bool] | None: ...
    @property
    def t(self) -> int: ...
    @property
    def work(self) -> int: ...
    @property
    def forms(self) -> int: ...

def sequence_projection(
    t: int,
    estimate: float,
    width: float,
    half_width: float,
    shift: float,
    target: float | None,
    effect: float | None,
    horizon: int | None,
    limit: int,
) -> int | None: ...
def sequence_bounds(
    x: npt.ArrayLike, population_size: int | None, alpha: float, horizon: int | None
) -> tuple[float, float, bool]: ...
def sequence_first_hits(
    x: npt.ArrayLike,
    m: npt.ArrayLike,
    population_size: int | None,
    alpha: float,
    horizon: int | None,
    up: bool = True,
    down: bool = True,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
def gap_intervals(
    gaps: npt.ArrayLike,
    methods: npt.ArrayLike,
    *,
    population_size: npt.ArrayLike | None = None,
    alpha: float = 0.05,
    n_threads: int | None = None,
) -> dict[str, npt.NDArray[np.float64]]: ...
def constat_bootstrap(
    scores: npt.ArrayLike,
    reference_scores: npt.ArrayLike,
    references: npt.ArrayLike,
    tested: npt.ArrayLike,
    n_bootstrap: int,
    guess_benchmark: float,
    guess_reference: float,
    smoothing: float,
    sort: bool,
    key0: int,
    key1: int,
    *,
    n_threads: int | None = None,
) -> tuple[
    npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.int8]
]: ...
def randomization_test(
    public: npt.ArrayLike,
    fresh: npt.ArrayLike,
    method: int,
    max_denominator: int,
    n_draws: int,
    key0: int,
    key1: int,
    *,
    n_threads: int | None = None,
) -> tuple[float, float, float, int, int, float, int]: ...
def sign_flip_test(
    differences: npt.ArrayLike,
    *,
    exact: bool,
    n_resamples: int,
    key0: int,
    key1: int,
    alpha_tail: float,
    n_threads: int | None = None,
) -> dict[str, int | float]: ...
def sign_flip_counts(
    differences: npt.ArrayLike,
    *,
    exact: bool,
    n_resamples: int,
    key0: int,
    key1: int,
    n_threads: int | None = None,
) -> dict[str, int]: ...
def sign_flip_exact_pairs(
    a: npt.ArrayLike, b: npt.ArrayLike, *, n_threads: int | None = None
) -> dict[str, int]: ...
def sign_flip_monte_carlo_pairs(
    a: npt.ArrayLike,
    b: npt.ArrayLike,
    *,
    n_resamples: int,
    key0: int,
    key1: int,
    n_threads: int | None = None,
    screen: bool = True,
) -> dict[str, int]: ...
def sign_flip_count_two_sided(values: npt.ArrayLike) -> float: ...
def cluster_bootstrap_difference(
    treated_sum: npt.ArrayLike,
    treated_count: npt.ArrayLike,
    control_sum: npt.ArrayLike,
    control_count: npt.ArrayLike,
    *,
    n_resamples: int,
    key0: int,
    key1: int,
    n_threads: int | None = None,
) -> npt.NDArray[np.float64]: ...

# resampling: replicate b draws from Philox task stream b (see src/cpp/truescore/resampling.hpp)
def pattern_test(
    indicator: npt.ArrayLike,
    min_models: int,
    draws: int,
    key0: int,
    key1: int,
    *,
    n_threads: int | None = None,
) -> tuple[int, npt.NDArray[np.int64]]: ...
def rao_wu_replicates(
    values: npt.ArrayLike,
    offsets: npt.ArrayLike,
    resample_size: npt.ArrayLike,
    lam: npt.ArrayLike,
    weight: npt.ArrayLike,
    replicates: int,
    key0: int,
    key1: int,
    *,
    n_threads: int | None = None,
) -> npt.NDArray[np.float64]: ...
def rao_wu_weights(
    offsets: npt.ArrayLike,
    resample_size: npt.ArrayLike,
    lam: npt.ArrayLike,
    weight: npt.ArrayLike,
    first: int,
    count: int,
    key0: int,
    key1: int,
) -> npt.NDArray[np.float64]: ...
def bbh_replicates(
    values: npt.ArrayLike,
    offsets: npt.ArrayLike,
    population_size: npt.ArrayLike,
    weight: npt.ArrayLike,
    replicates: int,
    key0: int,
    key1: int,
    *,
    n_threads: int | None = None,
) -> npt.NDArray[np.float64]: ...
def did_replicates(
    dp_e: npt.ArrayLike,
    df_e: npt.ArrayLike,
    e_offsets: npt.ArrayLike,
    dp_u: npt.ArrayLike,
    df_u: npt.ArrayLike,
    u_offsets: npt.ArrayLike,
    shared_parents: bool,
    replicates: int,
    key0: int,
    key1: int,
    *,
    n_threads: int | None = None,
) -> npt.NDArray[np.float64]: ...

# calibration: allocation of a stratified design
def proportional_allocation(stratum_sizes: npt.ArrayLike, n: int) -> npt.NDArray[np.int64]: ...

# calibration: per-task partial sums of the studies, (tasks, ...) float64
COVERAGE_SUMS: dict[str, int]
DETECTION_SUMS: dict[str, int]
BUDGET_SUMS: dict[str, int]
CALIBRATION_BLOCK: int

def coverage_tasks(
    values: npt.ArrayLike,
    offsets: npt.ArrayLike,
    allocation: npt.ArrayLike,
    lattice_values: npt.ArrayLike,
    lattice_counts: npt.ArrayLike,
    methods: npt.ArrayLike,
    alpha: float,
    truth: float,
    key0: int,
    key1: int,
    task_offset: int,
    replications: int,
    block: int,
    task_begin: int,
    task_end: int,
    *,
    n_threads: int | None = None,
) -> npt.NDArray[np.float64]: ...
def detection_tasks(
    public: npt.ArrayLike,
    fresh: npt.ArrayLike,
    n: int,
    relabel: bool,
    flip_public: float,
    flip_fresh: float,
    guardrail: int,
    fallback: int,
    alpha: float,
    key0: int,
    key1: int,
    task_offset: int,
    replications: int,
    block: int,
    task_begin: int,
    task_end: int,
    *,
    n_threads: int | None = None,
) -> npt.NDArray[np.float64]: ...
def budget_tasks(
    gaps: npt.ArrayLike,
    n: int,
    pair_high: npt.ArrayLike,
    pair_low: npt.ArrayLike,
    method: int,
    alpha: float,
    key0: int,
    key1: int,
    task_offset: int,
    replications: int,
    block: int,
    task_begin: int,
    task_end: int,
    *,
    n_threads: int | None = None,
) -> npt.NDArray[np.float64]: ...

# testing: the _core.testing submodule, test-only hooks (survey designs of sample_indices:
# 0 srs, 1 stratified, 2 with replacement, 3 Bernoulli)
class _Testing(ModuleType):
    @staticmethod
    def betting_interval_bisection(
        d: npt.ArrayLike, population_size: float, alpha: float, bisection: bool = True
    ) -> tuple[float, float]: ...
    @staticmethod
    def simd_level(request: int = -1) -> int: ...
    @staticmethod
    def betting_vector_level() -> int: ...
    @staticmethod
    def rank_vector_path() -> str: ...
    @staticmethod
    def binomial_sample(
        n: int, p: float, size: int, key0: int, key1: int
    ) -> npt.NDArray[np.int64]: ...
    @staticmethod
    def normal_quantile(p: float) -> float: ...
    @staticmethod
    def cgroup_cpu_quota(proc_cgroup: str, sys_root: str) -> int: ...
    @staticmethod
    def cpu_budget() -> int: ...
    @staticmethod
    def input_alignment(
        d: npt.ArrayLike, strided: npt.ArrayLike, i: npt.ArrayLike
    ) -> tuple[int, int, int]: ...
    @staticmethod
    def sign_flip_select(
        values: npt.ArrayLike, ranks: npt.ArrayLike
    ) -> npt.NDArray[np.float64]: ...
    @staticmethod
    def pool_workers() -> int: ...
    @staticmethod
    def pool_probe(
        mode: str,
        marks: npt.NDArray[np.int64],
        tasks: int,
        n_threads: int,
        block_ms: float = 0.0,
        stop: npt.NDArray[np.int64] | None = None,
    ) -> None: ...
    @staticmethod
    def parallel_block_sums(
        values: npt.ArrayLike, blocks: int, n_threads: int, pool: bool = True, calls: int = 1
    ) -> npt.NDArray[np.float64]: ...
    @staticmethod
    def philox_raw(key0: int, key1: int, task: int, n: int) -> npt.NDArray[np.uint64]: ...
    @staticmethod
    def philox_words(
        key0: int, key1: int, task: int, sizes: npt.ArrayLike
    ) -> npt.NDArray[np.uint64]: ...
    @staticmethod
    def packed_draws(
        n: int, key0: int, key1: int, task: int, sizes: npt.ArrayLike
    ) -> npt.NDArray[np.uint64]: ...
    @staticmethod
    def sample_indices(
        design: int,
        population_size: int,
        n: int,
        offsets: npt.ArrayLike,
        allocation: npt.ArrayLike,
        probability: float,
        key0: int,
        key1: int,
        task: int,
        draws: int,
    ) -> npt.NDArray[np.int64] | npt.NDArray[np.uint8]: ...
    @staticmethod
    def hypergeometric_counts(
        counts: npt.ArrayLike, n: int, key0: int, key1: int, task: int, draws: int
    ) -> npt.NDArray[np.int64]: ...

    # portable.hpp's operations, native branch or plain C++ fallback (portable=True)
    @staticmethod
    def mul_wide(
        a: npt.ArrayLike, b: npt.ArrayLike, portable: bool
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
    @staticmethod
    def div_wide(
        hi: npt.ArrayLike, lo: npt.ArrayLike, d: npt.ArrayLike, portable: bool
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
    @staticmethod
    def popcount(x: npt.ArrayLike, bits: int, portable: bool) -> npt.NDArray[np.int64]: ...
    @staticmethod
    def cpu_features(from_cpuid: bool) -> dict[str, bool]: ...
    @staticmethod
    def decode_cpuid(
        max_leaf: int, leaf1_ecx: int, leaf7_ebx: int, xcr0: int
    ) -> dict[str, bool]: ...
    @staticmethod
    def has_cpuid() -> bool: ...
    @staticmethod
    def smoothing_spline_predict(
        x: npt.ArrayLike, y: npt.ArrayLike, w: npt.ArrayLike, smoothing: float, x0: float
    ) -> float: ...
    @staticmethod
    def smoothing_spline_gcv_lambda(
        x: npt.ArrayLike, y: npt.ArrayLike, w: npt.ArrayLike
    ) -> float: ...
    @staticmethod
    def smoothing_spline_gcv(
        x: npt.ArrayLike, y: npt.ArrayLike, w: npt.ArrayLike, smoothing: float
    ) -> float: ...

testing: _Testing

def memory_limit(
    *,
    meminfo: str = "/proc/meminfo",
    self_cgroup: str = "/proc/self/cgroup",
    cgroup_root: str = "/sys/fs/cgroup",
    address_space: bool = True,
) -> int | None: ...
def format_bytes(nbytes: float) -> str: ...
def memory_error(
    name: str, nbytes: float, advice: str | None = None, limit: int | None = None
) -> SizeError: ...
