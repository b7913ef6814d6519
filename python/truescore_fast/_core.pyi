# Stub of the compiled module truescore_fast._core (kept in sync by tests/test_stub.py).
# Internal: use the truescore_fast package's public functions instead.

import numpy as np
import numpy.typing as npt

RESAMPLE_BLOCK: int
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
def sign_flip_monte_carlo_grouped(
    magnitudes: npt.ArrayLike,
    counts: npt.ArrayLike,
    net: npt.ArrayLike,
    n_resamples: int,
    key0: int,
    key1: int,
    *,
    n_threads: int | None = None,
) -> dict[str, int | float]: ...
def binomial_sample(
    n: int, p: float, size: int, key0: int, key1: int
) -> npt.NDArray[np.int64]: ...
def sign_flip_exact(
    a: npt.ArrayLike, b: npt.ArrayLike, *, n_threads: int | None = None
) -> dict[str, int | float]: ...
def sign_flip_monte_carlo(
    diffs: npt.ArrayLike, n_resamples: int, key0: int, key1: int, *, n_threads: int | None = None
) -> dict[str, int | float]: ...
def rank_test(
    canonical: float, permuted: npt.ArrayLike
) -> tuple[float, float, float, float]: ...
def rank_tests_dense(
    canonical: npt.ArrayLike, permuted: npt.ArrayLike, *, n_threads: int | None = None
) -> dict[str, npt.NDArray[np.float64] | npt.NDArray[np.int64]]: ...
def rank_tests_ragged(
    canonical: npt.ArrayLike,
    values: npt.ArrayLike,
    offsets: npt.ArrayLike,
    *,
    n_threads: int | None = None,
) -> dict[str, npt.NDArray[np.float64] | npt.NDArray[np.int64]]: ...
def row_means(
    values: npt.ArrayLike, offsets: npt.ArrayLike, *, n_threads: int | None = None
) -> npt.NDArray[np.float64]: ...
def fisher_log_sf(statistic: float, n_shards: int) -> float: ...
def philox_raw(key0: int, key1: int, task: int, n: int) -> npt.NDArray[np.uint64]: ...
