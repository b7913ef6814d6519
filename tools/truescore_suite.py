"""Run truescore 0.7.4's own test suite against truescore_fast (the drop-in contract).

Downloads truescore's source distribution once (cached under build/, never committed),
then runs its tests/ with ``truescore_fast.patch_truescore()`` applied before pytest
collects anything, so every ``from truescore.compare import ...`` in truescore and in
its tests resolves to truescore_fast. Exit status is pytest's. Usage:

    python tools/truescore_suite.py [extra pytest arguments]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

VERSION = "0.7.4"
ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "build" / f"truescore-{VERSION}-sdist"
PLUGIN = "truescore_fast_patch_plugin"
PLUGIN_SOURCE = '''\
"""pytest plugin: patch truescore before any test module imports it."""


def pytest_configure(config):
    import truescore_fast

    truescore_fast.patch_truescore()
    config.truescore_fast_patched = truescore_fast.is_patched()


def pytest_report_header(config):
    return f"truescore_fast.patch_truescore() applied: {config.truescore_fast_patched}"
'''


def _installed_truescore() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("truescore")
    except PackageNotFoundError:
        return "not installed"


def source_tree() -> Path:
    """truescore's unpacked sdist (downloaded with pip on the first call)."""
    tree = CACHE / f"truescore-{VERSION}"
    if not (tree / "tests").is_dir():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"truescore=={VERSION}",
                "--no-binary",
                ":all:",
                "--no-deps",
                "--quiet",
                "-d",
                str(CACHE),
            ],
            check=True,
        )
        with tarfile.open(CACHE / f"truescore-{VERSION}.tar.gz") as archive:
            try:  # the safe "data" filter, where this Python has it (3.10.12 and later)
                archive.extractall(CACHE, filter="data")
            except TypeError:
                archive.extractall(CACHE)  # noqa: S202 - PyPI's own sdist of a pinned version
    (CACHE / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE)
    return tree


def main(argv: list[str]) -> int:
    installed = _installed_truescore()
    if installed != VERSION:
        print(
            f"truescore {VERSION} must be installed (the test extra pins it); found {installed}",
            file=sys.stderr,
        )
        return 1
    tree = source_tree()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CACHE), env.get("PYTHONPATH")]))
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        PLUGIN,
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tree),
        str(tree / "tests"),
        *argv,
    ]
    return subprocess.run(command, cwd=tree, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
