"""Set-up for the whole suite."""

from __future__ import annotations

import signal

# A test run started in the background by a shell without job control (`cmd &` in a
# script, as CI runners and nohup may do) begins with SIGINT ignored, and every child a
# test starts inherits that: the Ctrl-C tests' signals would then be ignored and those
# tests fail for a reason that is not the library's. Python's own handler is restored here,
# so children start with the default action (an ignored signal stays ignored across exec,
# a handled one does not).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
