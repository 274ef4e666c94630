"""`.hive/bin/hive`, the `hive` on every agent's PATH (`shim`), and what it runs when the shell
alone will not do: `python -I -S` with this module and ARGS... (hive.scripts).

An agent's one certain call is its signal, `hive done` (or `blocked`, `too-big`), and each
task pays for it: `python -m hive` costs ~120 ms of CPU (site, the venv's import hooks, the
CLI), a third of all Hive spends on an instant task (bench/merge_queue.py's replay is bound
by CPU). Here, with `-I -S` and the standard library only, a signal costs ~12 ms; a plain one
written by the shim's shell, ~3 ms (`date`, `ln`, `rm`). It is
written where Hive said (HIVE_SIGNAL_FILE, the attempt's `Paths.signal_file`), exactly as
`hive.store.agent_signals.send` writes one (it calls `send` below).

Anything else, and any form of a signal this does not know (`--help`, another option, no
HIVE_SIGNAL_FILE), becomes `python -m hive ARGS...`: the whole CLI, with its checks and errors.
"""

from __future__ import annotations

import os
import sys
import time

try:  # how json.dumps quotes a string, without importing json: its `re` costs ~10 ms a signal
    from _json import encode_basestring_ascii as _quoted
except ImportError:  # another Python than CPython
    from json import dumps as _quoted

# verb → the signal's kind: hive.lifecycle.SIGNALS, as plain strings (a test keeps them equal);
# and a reviewer's (REVIEW_SIGNALS: done, changes), only where HIVE_REVIEW says it is one
KINDS = {"done": "done", "blocked": "blocked", "too-big": "too_big"}
REVIEW_KINDS = {"done": "done", "changes": "changes"}
SIGNAL_FILE = "HIVE_SIGNAL_FILE"
REVIEW = "HIVE_REVIEW"


# `.hive/bin/hive` itself (`shim`): a plain signal — the verbs above, no reason or one of printable
# ASCII without `"` or `\`, the usual variables — is written by the shell, as `send` writes it
# (beside it, then linked into place: the first one counts), without starting Python (~12 ms of CPU
# on every task's way: issue 44); anything else, or where a step cannot be taken here (no GNU `date
# +%N`, no folder), is this module's. Not fsynced (nor are the agent's own commits by git): a kill
# -9 leaves it whole or absent all the same. LC_ALL=C: byte by byte, whatever the agent's locale.
_SHIM = r"""#!/bin/sh
# made by Hive (hive/agentshim.py): an agent's `hive`
LC_ALL=C
py() {
    trap - HUP INT TERM
    exec @PYTHON@ "$@"
}
case "${HIVE_REVIEW:+review}:$1" in
    :done | review:done) kind=done ;;
    :blocked) kind=blocked ;;
    :too-big) kind=too_big ;;
    review:changes) kind=changes ;;
    *) py "$@" ;;
esac
if [ $# -eq 1 ]; then
    reason=
elif [ $# -eq 2 ] && [ "${2#--reason=}" != "$2" ]; then
    reason=${2#--reason=}
elif [ $# -eq 3 ] && [ "$2" = --reason ]; then
    reason=$3
else
    py "$@"
fi
sig=${HIVE_SIGNAL_FILE:-} task=${HIVE_TASK:-} attempt=${HIVE_ATTEMPT:-}
case "$attempt" in '' | *[!0-9]* | 0?*) py "$@" ;; esac
case "$reason$task" in *[![:print:]]* | *[\"\\]*) py "$@" ;; esac
[ -n "$sig" ] && [ -n "$task" ] && [ -d "${sig%/*}" ] || py "$@"
now=$(date +%s.%N 2>/dev/null)
case "$now" in *[!0-9.]* | .* | *. | *.*.*) py "$@" ;; *.*) ;; *) py "$@" ;; esac
trap '' HUP INT TERM  # see outlast_stop
tmp="$sig.$$.tmp"
printf '{"signal": "%s", "reason": "%s", "time": %s, "task": "%s", "attempt": %s}' \
    "$kind" "$reason" "$now" "$task" "$attempt" >"$tmp" || py "$@"
if ln "$tmp" "$sig" 2>/dev/null; then
    rm -f "$tmp"
    printf 'hive: %s signalled %s; Hive takes it from here \342\200\224 stop now.\n' "$task" "$1" || :
elif [ -e "$sig" ]; then
    rm -f "$tmp"
    printf 'hive: %s attempt %s had already signalled; this one is ignored.\n' "$task" "$attempt" || :
else
    rm -f "$tmp"
    py "$@"
fi
"""


def outlast_stop() -> None:
    """Let a signal's last steps outlast Hive's stop (SIGKILL still ends them). The signal is
    seen the moment it is linked, and Hive then stops the agent's processes, this one among
    them: killed before it removed its temporary file and said it was sent, it left the file
    and told its agent the signal failed — seen, under load, an agent that then gave up and
    exited (a flake of tests/e2e/test_signals.py; also `tell`). `_signal`: `signal` imports
    `enum`."""
    import _signal  # type: ignore[import-not-found]  # (no stub: `signal` without its enums)

    for number in (_signal.SIGHUP, _signal.SIGINT, _signal.SIGTERM):
        _signal.signal(number, _signal.SIG_IGN)


def tell(text: str) -> None:
    """Say `text` to the agent; a signal that is sent succeeds even if it cannot be said. Its
    terminal hangs up as Hive stops the session it signalled from (the pane's shell ends
    first): a failed write made `hive done` fail, Python's exit status 120 for what it could
    not flush at exit among them."""
    try:
        os.write(1, f"{text}\n".encode())
    except OSError:
        pass


def shim(python: str) -> str:
    """The text of `.hive/bin/hive`, whose slow way is the shell command `python`."""
    return _SHIM.replace("@PYTHON@", python)


def send(path: str, kind: str, reason: str, task: str, attempt: int) -> bool:
    """Create the signal file `path` unless it exists: True if this call created it (the first
    signal of an attempt counts). Whole or absent after a kill -9: written beside it, synced,
    then linked into place (a link fails where a file already is)."""
    payload = _payload(kind, reason, time.time(), task, attempt)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        try:
            os.write(fd, payload.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)


def _payload(kind: str, reason: str, at: float, task: str, attempt: int) -> str:
    """The signal as `json.dumps` writes it (a test holds the two equal)."""
    kind, reason, task = _quoted(kind), _quoted(reason), _quoted(task)
    return f'{{"signal": {kind}, "reason": {reason}, "time": {float(at)!r}, "task": {task}, "attempt": {int(attempt)}}}'


def said(task: str, verb: str, attempt: int | str, sent: bool) -> str:
    """What an agent is told of its signal (the whole CLI's `hive done` says the same)."""
    if sent:
        return f"hive: {task} signalled {verb}; Hive takes it from here — stop now."
    return f"hive: {task} attempt {attempt} had already signalled; this one is ignored."


def _reason(args: list[str]) -> str | None:
    """`--reason R`, `--reason=R` or nothing; None for anything else (the full CLI decides)."""
    if not args:
        return ""
    if len(args) == 2 and args[0] == "--reason":
        return args[1]
    if len(args) == 1 and args[0].startswith("--reason="):
        return args[0].removeprefix("--reason=")
    return None


def main(args: list[str]) -> int:
    path, task, attempt = (os.environ.get(v, "") for v in (SIGNAL_FILE, "HIVE_TASK", "HIVE_ATTEMPT"))
    kinds = REVIEW_KINDS if os.environ.get(REVIEW) else KINDS
    reason = _reason(args[1:]) if args and args[0] in kinds else None
    if reason is None or not path or not task or not attempt.isdigit():
        os.execv(sys.executable, [sys.executable, "-m", "hive", *args])
    verb = args[0]
    outlast_stop()
    tell(said(task, verb, attempt, send(path, kinds[verb], reason, task, int(attempt))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
