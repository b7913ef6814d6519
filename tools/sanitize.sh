#!/usr/bin/env bash
# The test suite (or the tests given as arguments) under AddressSanitizer and UBSan.
#
#   tools/sanitize.sh                                  # every test
#   tools/sanitize.sh tests/compare/test_paired.py -k exact   # a subset: arguments go to pytest
#
# Builds the core with -DTRUESCORE_SANITIZE=ON into build/asan (TRUESCORE_ASAN_DIR to
# change it), copies python/truescore_fast with that module into a temporary directory
# (the work tree's own _core*.so is never touched) and runs pytest there with libasan and
# libstdc++ preloaded (the Python executable links neither; without libstdc++ ASan aborts
# at the first C++ exception). Leak detection is off: CPython's own allocations would
# drown the report. Needs pybind11 importable (pip install pybind11), cmake, ninja, g++.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TRUESCORE_ASAN_DIR:-build/asan}
cd "$root"
python -c "import pybind11" 2>/dev/null || {
  echo "sanitize.sh: pybind11 is not installed (pip install pybind11)" >&2
  exit 2
}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRUESCORE_SANITIZE=ON \
  -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" >/dev/null
cmake --build "$build"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r python/truescore_fast "$tmp/"
rm -f "$tmp"/truescore_fast/_core*.so
cp "$build"/_core*.so "$tmp/truescore_fast/"

if [ $# -eq 0 ]; then set -- tests; fi
# Tests that start subprocesses hand them PYTHONPATH and the environment, so they run
# the sanitized module too.
LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)" \
ASAN_OPTIONS=detect_leaks=0${ASAN_OPTIONS:+:$ASAN_OPTIONS} \
UBSAN_OPTIONS=print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS} \
PYTHONPATH="$tmp${PYTHONPATH:+:$PYTHONPATH}" \
  python -m pytest -q -p no:cacheprovider "$@"
