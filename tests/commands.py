"""The command line as the tests run it: ``run_cli`` calls ``main(argv)`` in this
process with its streams captured (most tests), ``run_cli_process`` runs it as a child
process (for what needs one); ``run_calibrate`` and ``run_calibrate_process`` the same for
``calibrate``; ``assert_one_line_error`` checks that an error is one
line, exit code 1, naming the given words; ``loaded_modules`` runs it in a fresh
interpreter and lists every module it loaded."""

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from truescore_fast.cli import ExitCode, main


def run_cli(*argv, stdin=None, cwd=None):
    """``truescore-fast ARGV`` run in this process: (exit code, stdout, stderr).

    ``main(argv)`` with sys.stdout and sys.stderr captured (and sys.stdin reading the
    bytes ``stdin``, the working directory ``cwd``, both restored afterwards). An
    exception main lets through is not caught here: where a user would see a traceback,
    the test fails. argparse's exits (--help, --version, a usage error) give their code.
    """
    out, err = io.StringIO(), io.StringIO()
    saved_stdin, saved_cwd = sys.stdin, os.getcwd()
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = int(main([str(word) for word in argv]))
            except SystemExit as exit_:  # what the interpreter makes of sys.exit(code)
                if exit_.code is None or isinstance(exit_.code, int):
                    code = exit_.code or 0
                else:
                    print(exit_.code, file=sys.stderr)
                    code = 1
    finally:
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code, err, *words):
    assert "Traceback" not in err, err
    assert code == ExitCode.ERROR, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], lines[0]


def run_cli_process(*argv, stdin=None, pre=""):
    """``truescore-fast ARGV`` as a child process (``python -c`` running ``pre``, then
    ``main``): for what needs a process of its own, such as a module made unimportable
    before start-up."""
    code = f"{pre}from truescore_fast.cli import main; import sys; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run(
        [sys.executable, "-c", code, *map(str, argv)],
        capture_output=True,
        check=False,
        timeout=120,
        input=stdin,
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


# Runs the command line, then prints sys.modules (however imported) on stderr's last line.
_RUN_AND_LIST = """
import json, sys
from truescore_fast.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
finally:
    print(json.dumps(sorted(sys.modules)), file=sys.stderr)
sys.exit(code)
"""


def loaded_modules(*argv):
    """Every module in sys.modules after ``truescore-fast ARGV`` ran in a fresh
    interpreter, and the process."""
    proc = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST, *map(str, argv)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return set(json.loads(proc.stderr.strip().splitlines()[-1])), proc


def child_env(env=None):
    """The environment for a child, PYTHONPATH made absolute (a test may change cwd)."""
    env = dict(os.environ if env is None else env)
    if env.get("PYTHONPATH"):
        parts = env["PYTHONPATH"].split(os.pathsep)
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in parts)
    return env


def run_calibrate(*argv, cwd=None):
    """``truescore-fast calibrate ARGV`` in this process: (exit code, stdout, stderr)."""
    return run_cli("calibrate", *argv, cwd=cwd)


def run_calibrate_process(*argv, timeout=300, env=None, **kwargs):
    """``truescore-fast calibrate ARGV`` as a process, for what needs one."""
    proc = subprocess.run(
        [sys.executable, "-m", "truescore_fast", "calibrate", *map(str, argv)],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
        env=child_env(env),
        **kwargs,
    )
    return proc.returncode, proc.stdout, proc.stderr
