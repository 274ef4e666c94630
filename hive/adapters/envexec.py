"""`python -I -S envexec.py ENV_FILE [--beside SOCKET N PROGRAM...] ARGV...`: run ARGV
with exactly the environment in ENV_FILE (`encode`'s: NAME=VALUE, each ended by a NUL byte, as
the kernel keeps one), then delete the file (ENV_FILE `-`: with this process's own); with
`--beside`, listen on the unix socket SOCKET beside it and, at its first connection, start the
N words of PROGRAM to serve it.

A tmux session starts with the environment of the tmux *server* — of whichever
process started it first — not of the `doit` that asks for the session: a variable
the user exported for this run (IS_SANDBOX=1, an API key) never reached the agent.
The whole intended environment goes through a file, not the command line, because
tmux limits the size of one command. It starts every unsandboxed agent (bubblewrap takes a sandboxed
one's environment itself: hive.adapters.tmux), so it runs under `-I -S` from its
cached bytecode (hive.scripts) and imports nothing (json's `re` alone would double its ~10 ms of
CPU; `-m hive.adapters.envexec` would add site and Hive's venv), on a machine starting 64 agents.

`--beside` is how a sandboxed check gets its proxy (hive.sandbox.proxy; a sandboxed agent's is
served the same way by its log's writer, hive.logcap, `start_beside(of=...)`) without
waiting for it, nor paying for one it never asks (most checks): the socket is bound here (the
first request finds it), and a child of this process waits, costing nothing, for the first
connection or for ARGV's end (this process becomes ARGV). On a connection it becomes PROGRAM,
with the same environment and three more arguments: the listening socket's descriptor, this
process's pid and a pidfd of it (-1 where the kernel has none), by which PROGRAM sees ARGV's
end. If ARGV ends first it removes SOCKET. Ctrl-C or a hang-up meant for the agent does not
end it.
"""

from __future__ import annotations

import os
import sys


def main(args: list[str]) -> int:
    path, argv = (args[0], args[1:]) if args else ("", [])
    socket_path, beside = "", []
    if len(argv) >= 3 and argv[0] == "--beside" and argv[2].isdigit():
        n = int(argv[2])
        socket_path, beside, argv = argv[1], argv[3 : 3 + n], argv[3 + n :]
    if not argv:
        print("usage: python -I -S envexec.py ENV_FILE [--beside SOCKET N PROGRAM...] ARGV...", file=sys.stderr)
        return 2
    try:
        env = dict(os.environ) if path == "-" else _environment(path)
    except (OSError, ValueError) as e:
        print(f"hive: cannot read the agent's environment from {path}: {e}", file=sys.stderr)
        return 127
    if beside:
        start_beside(socket_path, beside, env)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as e:
        print(f"hive: cannot run {argv[0]!r}: {e}", file=sys.stderr)
        return 127


def encode(env: dict[str, str]) -> bytes:
    """An environment as ENV_FILE holds it."""
    check(env)
    return b"".join(os.fsencode(name) + b"=" + os.fsencode(value) + b"\0" for name, value in env.items())


def check(env: dict[str, str]) -> None:
    """ValueError for a variable no environment can hold (bubblewrap's `--setenv` as much as a file)."""
    for name, value in env.items():
        if not name or "=" in name or "\0" in name or "\0" in value:
            raise ValueError(f"no environment can hold the variable {name!r}")


def _environment(path: str) -> dict[str, str]:
    with open(path, "rb") as f:
        data = f.read()
    os.unlink(path)  # it may hold credentials: on disk no longer than needed
    if data and not data.endswith(b"\0"):
        raise ValueError("it ends half-written")
    pairs = [entry.partition(b"=") for entry in data.split(b"\0")[:-1]]
    if not all(sep for _, sep, _ in pairs):
        raise ValueError("an entry without `=`")
    return {os.fsdecode(name): os.fsdecode(value) for name, _, value in pairs}


def beside(socket: str, program: list[str]) -> list[str]:
    """The options that start `program` beside ARGV, served at `socket` (see above)."""
    return ["--beside", socket, str(len(program)), *program]


def start_beside(path: str, program: list[str], env: dict[str, str], of: int = 0, tty: str = "") -> None:
    """Listen on `path`; a child starts `program` at the first connection (see above). `of`:
    the process it serves, if not this one (which then becomes it): hive.logcap's, beside a
    sandboxed agent's pane, watched through a pidfd (without one, nothing is started); the
    child's output then goes to the pane's terminal `tty`, as it would from inside the pane."""
    import _socket

    me = of or os.getpid()
    watch = -1
    if of:
        try:
            watch = os.pidfd_open(of)
        except OSError as e:  # gone already (ESRCH), or no pidfds: none to serve
            print(f"hive: not serving {program[0]!r} beside process {of}: {e}", file=sys.stderr)
            return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        try:
            os.unlink(path)  # left by one killed before it could remove it
        except FileNotFoundError:
            pass
        listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(64)
    except OSError as e:
        print(f"hive: cannot listen on {path} for {program[0]!r}: {e}", file=sys.stderr)
        if watch >= 0:
            os.close(watch)
        return
    if watch < 0:
        try:
            watch = os.pidfd_open(me)
        except (OSError, AttributeError):
            watch = -1
    if os.fork() == 0:
        try:
            if of:
                _to_terminal(tty)
            _serve_when_asked(listener.fileno(), watch, me, path, program, env)
        finally:
            os._exit(127)
    listener.close()  # this process becomes ARGV: the socket is the child's (and the pidfd is close-on-exec)
    if of:
        os.close(watch)


def _to_terminal(tty: str) -> None:
    """The child's output to the agent's terminal `tty` (what the proxy refuses shows there, and
    so in the task's log), its input from nowhere: not the log writer's pipe, which held open
    would keep tmux writing to it once the writer has gone."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        out = os.open(tty, os.O_WRONLY | os.O_NOCTTY) if tty else null
    except OSError:
        out = null
    for fd, to in ((0, null), (1, out), (2, out)):
        os.dup2(to, fd)
    for fd in {null, out} - {0, 1, 2}:
        os.close(fd)


def _serve_when_asked(fd: int, watch: int, me: int, path: str, program: list[str], env: dict[str, str]) -> None:
    """In the child: wait on the listening socket `fd` and the pidfd `watch` of process `me`."""
    import select
    import signal

    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # stays so in PROGRAM
    if watch >= 0:
        ready, _, _ = select.select([fd, watch], [], [])
    else:  # no pidfd: a connection, or a look every second whether ARGV (this process's parent) ended
        ready = []
        while not ready and os.getppid() == me:
            ready, _, _ = select.select([fd], [], [], 1.0)
    if fd not in ready:
        for remove, what in ((os.unlink, path), (os.rmdir, os.path.dirname(path))):
            try:
                remove(what)
            except OSError:
                pass
        return
    for kept in (fd, watch):
        if kept >= 0:
            os.set_inheritable(kept, True)
    try:
        os.execve(program[0], [*program, str(fd), str(me), str(watch)], env)
    except OSError as e:
        print(f"hive: cannot start {program[0]!r} beside the agent: {e}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
