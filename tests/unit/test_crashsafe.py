"""hive/crashsafe.py, in a real Python process: a Ctrl-C that lands where Python cannot raise
anything (a `__del__`, a weakref callback) is not lost and not printed; it stops the process
at the next line that can take it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CTRL_C_IN_DEL = textwrap.dedent(
    """
    import gc, os, signal, time
    from hive import crashsafe

    crashsafe.install()

    class Collected:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs inside __del__
            time.sleep(0.05)

    try:
        Collected()  # collected at once: its __del__ runs here
        gc.collect()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            time.sleep(0.01)
        print("not stopped")
    except KeyboardInterrupt:
        print("stopped by", crashsafe.stopped_by())
    """
)


def test_a_stop_raised_inside_a_finalizer_is_delivered_again_not_printed_and_lost():
    r = subprocess.run([sys.executable, "-c", CTRL_C_IN_DEL], capture_output=True, text=True, timeout=30)
    assert r.stdout.strip() == "stopped by 2", (r.stdout, r.stderr)
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr, r.stderr
