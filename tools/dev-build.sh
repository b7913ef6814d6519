#!/usr/bin/env bash
# Development build: compile the core into build/dev and copy _core*.so into
# python/truescore_fast/, so `PYTHONPATH=python pytest` tests this work tree without a
# pip install (each git worktree keeps its own build). Extra arguments go to cmake's
# configure step, e.g. tools/dev-build.sh -DTRUESCORE_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TRUESCORE_BUILD_DIR:-build/dev}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" "$@" >/dev/null
cmake --build "$build"
cp "$build"/_core*.so python/truescore_fast/
