#!/usr/bin/env bash
# The core on compilers and CPUs other than the GCC x86-64 build (CI runs this; so can you):
#
#  1. clang: the whole module (core and bindings), warnings as errors, into build/clang;
#  2. aarch64: the C++ core library cross-compiled by aarch64-linux-gnu-g++, warnings as
#     errors, into build/aarch64 (not the Python module: that needs aarch64 Python headers);
#  3. bit-identical results: tools/compare_builds.py runs seeded workloads (bootstrap,
#     permutation, exchangeability tests, betting, sign flips, a coverage study) on the
#     GCC-built module and the clang-built one, each on every vector path of this CPU;
#  4. aarch64 results: tools/core_digest.cpp, linked against each core, digests kernel
#     outputs on x86-64 (the clang build) and on aarch64 under qemu-user; the two must match.
#
# It installs nothing. It needs clang, g++-aarch64-linux-gnu and qemu-user (Debian:
# apt-get install -y clang g++-aarch64-linux-gnu qemu-user), cmake, ninja and pybind11.
# The GCC-built module compared is the installed package's (pip install .), or the file
# named by TRUESCORE_GCC_CORE (e.g. python/truescore_fast/_core*.so from tools/dev-build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in clang++ aarch64-linux-gnu-g++ qemu-aarch64 cmake ninja; do
  if ! command -v "$tool" >/dev/null; then
    echo "check-compilers: $tool not found (apt-get install -y clang g++-aarch64-linux-gnu qemu-user)" >&2
    exit 1
  fi
done
step() { echo "== check-compilers: $*"; }

step "clang $(clang++ -dumpversion), -Werror: build/clang"
cmake -S . -B build/clang -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=clang++ \
  -DTRUESCORE_WERROR=ON -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" >/dev/null
cmake --build build/clang

step "aarch64-linux-gnu-g++ $(aarch64-linux-gnu-g++ -dumpversion), -Werror: build/aarch64 (the core library)"
cmake -S . -B build/aarch64 -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_SYSTEM_NAME=Linux \
  -DCMAKE_SYSTEM_PROCESSOR=aarch64 -DCMAKE_CXX_COMPILER=aarch64-linux-gnu-g++ \
  -DTRUESCORE_WERROR=ON -DTRUESCORE_PYTHON=OFF >/dev/null
cmake --build build/aarch64 --target truescore_core

gcc_core=${TRUESCORE_GCC_CORE:-$(cd /tmp && python -c 'import truescore_fast._core as c; print(c.__file__)')}
clang_core=$(ls build/clang/_core*.so)
step "the same bits: $gcc_core (GCC) against $clang_core (clang)"
python tools/compare_builds.py "$gcc_core" "$clang_core"

step "the same bits on aarch64: tools/core_digest.cpp on x86-64 (clang) and under qemu-aarch64"
flags=(-std=c++17 -O2 -ffp-contract=off -Wall -Wextra -Werror -Isrc/cpp -pthread)
clang++ "${flags[@]}" tools/core_digest.cpp build/clang/libtruescore_core.a -o build/clang/core_digest
aarch64-linux-gnu-g++ "${flags[@]}" -static tools/core_digest.cpp build/aarch64/libtruescore_core.a \
  -o build/aarch64/core_digest
build/clang/core_digest >build/clang/core_digest.txt
qemu-aarch64 build/aarch64/core_digest >build/aarch64/core_digest.txt
cat build/aarch64/core_digest.txt
if grep -q DIFFER build/clang/core_digest.txt build/aarch64/core_digest.txt; then
  echo "check-compilers: a kernel's vector paths differ" >&2
  exit 1
fi
if ! diff build/clang/core_digest.txt build/aarch64/core_digest.txt; then
  echo "check-compilers: x86-64 and aarch64 results differ (lines above)" >&2
  exit 1
fi
echo "check-compilers: clang and aarch64 builds warning-free; results bit-identical"
