"""Run existing truescore code on the compiled core, without editing it.

``patch_truescore()`` replaces, in an installed truescore, every reference to the
functions and result types truescore_fast re-implements: the attributes of
``truescore.compare`` and ``truescore.contamination``, the names re-exported by
``truescore/__init__.py``, and every copy another truescore module took with
``from truescore.compare import ...`` (``truescore.cli``, ``truescore.slices``,
``truescore.doctor``, ...). truescore's own CLI and user scripts then run unchanged on the
fast implementations. ``unpatch_truescore()`` puts the originals back.

Patching is process-wide and not thread-safe while it runs: call it once, at start-up.
What changes for patched code: deterministic results (exact permutation p-values, holm,
Benjamini-Hochberg, the contamination module) are identical; resampling results
(bootstrap intervals and p-values, Monte Carlo permutation p-values) are statistically
equivalent but not the same draws, because truescore_fast uses its own generator.
Names truescore_fast does not implement (``mcnemar``, ``ppi_compare``, ...) stay
truescore's; those that build a ``ComparisonResult`` build ours, which has the same
fields and properties.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from types import ModuleType
from typing import Any

from truescore_fast.compare import paired as _compare
from truescore_fast.contamination import exact as _contamination

__all__ = ["is_patched", "patch_truescore", "unpatch_truescore"]

# (truescore module that defines the name, name) -> our replacement.
_REPLACEMENTS: dict[tuple[str, str], Any] = {
    ("truescore.compare", "ComparisonResult"): _compare.ComparisonResult,
    ("truescore.compare", "paired_bootstrap"): _compare.paired_bootstrap,
    ("truescore.compare", "paired_permutation"): _compare.paired_permutation,
    ("truescore.compare", "holm"): _compare.holm,
    ("truescore.compare", "benjamini_hochberg"): _compare.benjamini_hochberg,
    ("truescore.contamination", "ContaminationResult"): _contamination.ContaminationResult,
    ("truescore.contamination", "CombinedContamination"): _contamination.CombinedContamination,
    ("truescore.contamination", "exchangeability_test"): _contamination.exchangeability_test,
    ("truescore.contamination", "combine_shards"): _contamination.combine_shards,
}

# Every (module, attribute, original) we overwrote, in order, for unpatch_truescore().
_saved: list[tuple[ModuleType, str, Any]] = []


def _import_truescore() -> ModuleType:
    try:
        import truescore
    except ImportError as error:
        raise ImportError(
            "patch_truescore() needs truescore installed (pip install truescore); "
            "truescore_fast's own functions work without it"
        ) from error
    # Load every submodule now, so each `from truescore.compare import ...` copy exists and
    # gets patched (truescore.cli, for one, is not imported by the package itself).
    for info in pkgutil.walk_packages(truescore.__path__, prefix="truescore."):
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
    return truescore


def is_patched() -> bool:
    """Whether :func:`patch_truescore` is in effect."""
    return bool(_saved)


def patch_truescore() -> list[str]:
    """Make an installed truescore use truescore_fast's implementations everywhere.

    Idempotent: a second call changes nothing. Returns the ``module.name`` references that
    now point at truescore_fast (empty if already patched).

    Raises:
        ImportError: truescore is not installed.
    """
    _import_truescore()
    if _saved:
        return []
    originals = {key: getattr(sys.modules[key[0]], key[1]) for key in _REPLACEMENTS}
    # Keyed by identity; `originals` keeps every key object alive while this runs.
    by_identity = {id(obj): _REPLACEMENTS[key] for key, obj in originals.items()}
    patched: list[str] = []
    for module_name in sorted(sys.modules):
        if module_name != "truescore" and not module_name.startswith("truescore."):
            continue
        module = sys.modules[module_name]
        for name, value in list(vars(module).items()):
            replacement = by_identity.get(id(value))
            if replacement is None:
                continue
            _saved.append((module, name, value))
            setattr(module, name, replacement)
            patched.append(f"{module_name}.{name}")
    return patched


def unpatch_truescore() -> None:
    """Restore truescore's own implementations (a no-op when not patched)."""
    while _saved:
        module, name, original = _saved.pop()
        setattr(module, name, original)
