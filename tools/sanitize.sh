#!/usr/bin/env bash
# The test suite (or the tests given as arguments) under AddressSanitizer and UBSan.
#
#   tools/sanitize.sh                                  # every test, fuzz cases included
#   tools/sanitize.sh tests/compare/test_paired.py -k exact   # a subset: arguments go to pytest
#
# Builds the core with -DTRUESCORE_SANITIZE=ON into build/asan (TRUESCORE_ASAN_DIR to
# change it; configured once, then only rebuilt when a source changed), copies
# python/truescore_fast with that module into a temporary directory (the work tree's own
# _core*.so is never touched) and runs pytest there with libasan and libstdc++ preloaded
# (the Python executable links neither; without libstdc++ ASan aborts at the first C++
# exception). Leak detection is off: CPython's own allocations would drown the report.
# Needs pybind11 importable (pip install pybind11), cmake, ninja, g++.
#
# Any report fails the run loudly, wherever it happens: both sanitizers halt at the first
# report (halt_on_error=1) and write it to a file in $build/reports/ (log_path), so a
# report from a child process that a test started (a CLI run, a Ctrl-C test) is not
# hidden by pytest's capture or by a test that expects the child to fail. The script
# prints every report and exits 1 when there is one, and exits with pytest's status
# otherwise.
#
# The whole suite runs as TRUESCORE_SANITIZE_JOBS pytest processes (default: the CPUs this
# process may use, at most 4), each over a share of the test files balanced by size.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TRUESCORE_ASAN_DIR:-build/asan}
cd "$root"
python -c "import pybind11" 2>/dev/null || {
  echo "sanitize.sh: pybind11 is not installed (pip install pybind11)" >&2
  exit 2
}
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRUESCORE_SANITIZE=ON \
    -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" >/dev/null
fi
cmake --build "$build"  # nothing to do when the sanitized module is up to date

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r python/truescore_fast "$tmp/"
rm -f "$tmp"/truescore_fast/_core*.so
cp "$build"/_core*.so "$tmp/truescore_fast/"
reports="$root/$build/reports"
rm -rf "$reports"
mkdir -p "$reports"

# Tests that start subprocesses hand them PYTHONPATH and the environment, so they run
# the sanitized module too, and report to the same directory.
export LD_PRELOAD="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:log_path=$reports/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$reports/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export PYTHONPATH="$tmp${PYTHONPATH:+:$PYTHONPATH}"

# pytest with SIGINT at its default action, whatever this script inherited: a shell
# without job control starts background jobs (the groups below, or this script run as
# `nohup tools/sanitize.sh &`) with SIGINT ignored, a Python started so inherits that and
# never installs its Ctrl-C handler, and every test that presses Ctrl-C on a child would
# wait for it in vain.
#
# --capture=sys: pytest captures Python's sys.stdout/stderr only, so the process's own
# descriptor 2 stays the log. GCC's UBSan writes a fatal report (halt_on_error) to
# stderr whatever log_path says, and under pytest's default descriptor capture a report
# that ends the process was lost with it ("pytest exited 1" and nothing else).
pytest_() {
  python -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.executable, [sys.executable, "-m", "pytest", *sys.argv[1:]])' \
    -q -p no:cacheprovider --capture=sys "$@"
}
# A report in pytest's own output (the UBSan case above).
REPORT_PATTERN='runtime error: |ERROR: AddressSanitizer|SUMMARY: (AddressSanitizer|UndefinedBehaviorSanitizer)'

start=$(date +%s)
status=0
if [ $# -gt 0 ]; then
  # pytest's own status: read PIPESTATUS straight after the pipeline (an `|| true` after
  # it would leave only true's status there, and a failing subset would read as clean).
  set +e
  pytest_ "$@" 2>&1 | tee "$tmp/log"
  status=${PIPESTATUS[0]}
  set -e
else
  jobs=${TRUESCORE_SANITIZE_JOBS:-$(nproc)}
  jobs=$((jobs < 1 ? 1 : (jobs > 4 ? 4 : jobs)))
  # Test files to groups, largest first onto the lightest group (size stands in for time).
  python - "$jobs" "$tmp" <<'EOF'
import pathlib, sys
jobs, tmp = int(sys.argv[1]), sys.argv[2]
files = sorted(pathlib.Path("tests").rglob("test_*.py"), key=lambda p: -p.stat().st_size)
groups = [[0, []] for _ in range(jobs)]
for f in files:
    g = min(groups, key=lambda g: g[0])
    g[0] += f.stat().st_size
    g[1].append(str(f))
for i, (_, names) in enumerate(groups):
    pathlib.Path(tmp, f"group{i}").write_text("\n".join(names) + "\n")
EOF
  pids=()
  for ((i = 0; i < jobs; i++)); do
    mapfile -t files <"$tmp/group$i"
    pytest_ "${files[@]}" >"$tmp/log$i" 2>&1 &
    pids+=($!)
  done
  for ((i = 0; i < jobs; i++)); do
    code=0
    wait "${pids[$i]}" || code=$?
    echo "=== group $((i + 1)) of $jobs (pytest exit $code)"
    # failures and the summary; the passing dots are left out
    grep -v '^[.sx]*\( *\[ *[0-9]*%\]\)\?$' "$tmp/log$i" || true
    if [ "$code" -ne 0 ]; then status=$code; fi
  done
fi
elapsed=$(($(date +%s) - start))

shopt -s nullglob
for log in "$tmp"/log*; do
  if grep -Eq "$REPORT_PATTERN" "$log"; then
    grep -E -A40 "$REPORT_PATTERN" "$log" >"$reports/from-output-$(basename "$log")" || true
  fi
done
found=("$reports"/*)
if [ ${#found[@]} -gt 0 ]; then
  for f in "${found[@]}"; do
    echo "=== sanitizer report $f" >&2
    cat "$f" >&2
  done
  echo "sanitize.sh: FAILED: ${#found[@]} sanitizer report(s) above (kept in $reports), after ${elapsed} s" >&2
  exit 1
fi
if [ "$status" -ne 0 ]; then
  echo "sanitize.sh: FAILED: no sanitizer report, but pytest exited $status, after ${elapsed} s" >&2
  exit "$status"
fi
echo "sanitize.sh: clean: no sanitizer report and every test passed, in ${elapsed} s"
