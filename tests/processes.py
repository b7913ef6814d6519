"""The command line run as a child process, shared by the test files that run it:
``run_cli`` (``python -c`` calling ``truescore_fast.cli.main``: exit code, stdout and stderr
as text) and ``assert_one_line_error`` (an error is one line, exit code 1, naming the given
words). ``assert_one_line_error`` is the same check as tests/test_cli.py's."""

import subprocess
import sys

from truescore_fast.cli import ExitCode


def run_cli(*argv, stdin=None, pre=""):
    code = f"{pre}from truescore_fast.cli import main; import sys; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.run(
        [sys.executable, "-c", code, *map(str, argv)],
        capture_output=True,
        check=False,
        timeout=120,
        input=stdin,
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def assert_one_line_error(code, err, *words):
    assert "Traceback" not in err, err
    assert code == ExitCode.ERROR, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], lines[0]
