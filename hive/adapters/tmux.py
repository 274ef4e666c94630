"""Every tmux command Hive runs, as small verb-named functions.

Hive's sessions live on their own server (`tmux -L hive`, or `$HIVE_TMUX_SOCKET`),
so agents never mix with the user's sessions and tests can use a private socket.
Targets use `=name` so a session name never matches another by prefix.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from hive import logcap, scripts
from hive.adapters import envexec, proc, procfs
from hive.errors import CommandError
from hive.output import say
from hive.store.files import atomic_write_bytes


def socket() -> str:
    return os.environ.get("HIVE_TMUX_SOCKET", "hive")


def base_argv() -> list[str]:
    return ["tmux", "-L", socket()]


def socket_path() -> Path:
    """Where tmux puts this server's socket: $TMUX_TMPDIR (else /tmp), resolved, /tmux-<uid>/<name>."""
    base = os.path.realpath(os.environ.get("TMUX_TMPDIR") or "/tmp")
    return Path(base, f"tmux-{os.getuid()}", socket())


# What tmux's client prints when the server closes its connection unanswered. A server
# told to exit (`kill-server`) refuses every new client until it is gone, which takes it
# ~0.1 s; but a session created in the same instant as the kill (tmux 3.3a: a new-session
# racing a kill-server, seen as soak seed 20016) keeps it alive, and refusing, for as long
# as that session lives: every agent after it failed to start, each attempt used up in a
# second. Such a server is told again to exit (SIGTERM, what kill-server sends it), which
# ends the sessions no one can reach any more.
_REFUSED = "server exited unexpectedly"
REFUSAL_PATIENCE = 2.0  # how long refusals may last before the server is taken as stuck


def _tmux(*args: str, check: bool = True) -> proc.Result:
    argv = [*base_argv(), *args]
    patience, told, pause = time.monotonic() + REFUSAL_PATIENCE, False, 0.02
    while True:
        result = proc.run(argv, check=False, atomic=True)
        if result.code == 0 or _REFUSED not in result.stderr:
            break
        if time.monotonic() >= patience:
            if told or not _end_exiting_server():
                break
            told = True
        time.sleep(pause)
        pause = min(pause * 2, 0.25)
    if check and result.code != 0:
        raise CommandError(argv, result.code, result.output)
    return result


def _end_exiting_server() -> bool:
    """Tell the server stuck exiting on this socket to exit again; wait until it has.
    Whether there was one."""
    servers = [pid for pid in procfs.listening_on(socket_path()) if procfs.command_name(pid).startswith("tmux")]
    for pid in servers:
        say(f"the tmux server (pid {pid}) on {socket_path()} refuses every client: telling it again to exit")
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + REFUSAL_PATIENCE
    while any(procfs.pid_alive(pid) for pid in servers) and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(servers)


def version(timeout: float = 10.0) -> proc.Result:
    """`tmux -V`, unchecked: `hive doctor` and bug reports say what it printed."""
    return proc.run([*base_argv(), "-V"], check=False, timeout=timeout)


@dataclass(frozen=True)
class Pane:
    pid: int
    dead: bool
    exit_status: int | None


@dataclass(frozen=True)
class Program:
    """What a session runs: `argv` with exactly the environment `env`, which goes through
    `env_file`, and what `beside` (envexec.beside) starts beside it (the sandbox's proxy).
    `confined`: argv is bubblewrap's command line, which takes the environment itself."""

    argv: list[str]
    env: dict[str, str]
    env_file: Path
    beside: tuple[str, ...] = ()
    confined: bool = False


# A fixed wrapper (argv arrives as "$@", never inside the script text) that records
# the exit status: tmux's own #{pane_dead_status} can stay empty until it reaps the
# process, which tmux 3.3a was seen to delay for seconds.
_WRAPPER = (
    '"$@"; code=$?; printf "%s\\n" "$code" > "$HIVE_EXIT_FILE.tmp" && '
    'mv "$HIVE_EXIT_FILE.tmp" "$HIVE_EXIT_FILE"; exit "$code"'
)
# ... and for bubblewrap: the environment file (its --clearenv and --setenv options) open on fd 3
# for `bwrap --args 3`, and gone from the disk before the agent starts
_CONFINED_WRAPPER = 'exec 3<"$1" && rm -f -- "$1" || exit 127; shift; ' + _WRAPPER


def new_session(
    name: str,
    cwd: Path,
    program: Program,
    log: Path,
    exit_file: Path,
    keep: bool = True,
    log_cap: int = logcap.DEFAULT_CAP,
) -> int:
    """Start `program` as the session's initial command (through a fixed wrapper; no shell ever
    sees its argv as text), and in the same tmux command queue keep the pane after exit (`keep`)
    and pipe its output to `log`, so even an instantly failing command leaves its last words.
    Without `keep` the session ends with the command (set explicitly: a user's ~/.tmux.conf may
    turn remain-on-exit on), and a client attached to it returns. The log keeps the first and
    last `log_cap` bytes of the output (hive.logcap). Returns the pane's process id."""
    exit_file.parent.mkdir(parents=True, exist_ok=True)
    env = {**program.env, "HIVE_EXIT_FILE": str(exit_file)}
    launcher, serves = pane_command(program, env)
    writer = literal("exec " + shlex.join(logcap.command(log, log_cap, program.beside if serves else ())))
    if serves:  # the log's writer serves the proxy beside the pane: its pid and terminal
        writer += " #{pane_pid} #{pane_tty}"
    target = f"={name}:"
    log.parent.mkdir(parents=True, exist_ok=True)
    out = _tmux(
        "new-session",
        "-d",
        "-P",
        "-F",
        "#{pane_pid}",
        "-s",
        name,
        "-c",
        literal(str(cwd)),
        "-x",
        "200",
        "-y",
        "50",
        "--",
        *launcher,
        ";",
        "set-window-option",
        "-t",
        target,
        "remain-on-exit",
        "on" if keep else "off",
        ";",
        "pipe-pane",
        "-t",
        target,
        "-o",
        writer,  # one process: the shell becomes the log's writer
    ).stdout.split()
    return int(out[0]) if out and out[0].isdigit() else 0


def pane_command(program: Program, env: dict[str, str]) -> tuple[list[str], bool]:
    """What a pane runs for `program` with exactly `env` (its file written), and whether the log's
    writer is to serve the proxy beside it (else envexec does, or it has none)."""
    if program.confined and (not program.beside or _pidfds()):
        return _confined(program, env), bool(program.beside)
    return _envexec(program, env), False


def _envexec(program: Program, env: dict[str, str]) -> list[str]:
    """The pane's command through envexec: a tmux pane starts with the tmux *server's*
    environment, whatever the `doit` asking for it was run with."""
    atomic_write_bytes(program.env_file, envexec.encode(env), mode=0o600, durable=False)
    launcher = [*scripts.argv(envexec.__file__), str(program.env_file), *program.beside]
    return [*launcher, "sh", "-c", _WRAPPER, "hive-agent", *program.argv]


def _confined(program: Program, env: dict[str, str]) -> list[str]:
    """The pane's command with bubblewrap setting the environment (`--clearenv`, `--setenv`),
    read from the file it is given: no Python starts on a sandboxed agent's way (issue 44: ~10
    ms). The pane's shell gets only what finds the attempt's processes (procfs.MARKS), where its
    exit status goes and the agent's PATH, by which its programs are found, as envexec found them."""
    envexec.check(env)
    words = ["--clearenv", *(word for name, value in env.items() for word in ("--setenv", name, value))]
    atomic_write_bytes(program.env_file, b"".join(os.fsencode(w) + b"\0" for w in words), mode=0o600, durable=False)
    shown = {name: env[name] for name in (*procfs.MARKS, "HIVE_EXIT_FILE", "PATH") if name in env}
    found = [shutil.which(name, path=env.get("PATH")) or name for name in ("env", "sh", program.argv[0])]
    wrapper = [found[1], "-c", _CONFINED_WRAPPER, "hive-agent", str(program.env_file)]
    return [found[0], *(f"{k}={v}" for k, v in shown.items()), *wrapper, found[2], "--args", "3", *program.argv[1:]]


@functools.cache
def _pidfds() -> bool:
    """Can a process watch another's end (Linux 5.3)? The log's writer serves the sandbox's proxy
    only so; without, envexec does (its child sees the pane's process end as its parent's)."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return True


def literal(text: str) -> str:
    """`text` as itself where tmux expands formats — a start directory, pipe-pane's command, an
    option's value: `#` starts one (`#S` is the session's name, `#(...)` a shell command's
    output), `##` is a `#`. A repository under `~/src/C#Sharp` ran its agents in tmux's own
    folder, and wrote their logs elsewhere."""
    return text.replace("#", "##")


def has_session(name: str) -> bool:
    return _tmux("has-session", "-t", f"={name}", check=False).code == 0


def pane(name: str) -> Pane | None:
    result = _tmux(
        "display-message", "-p", "-t", f"={name}:", "#{pane_pid} #{pane_dead} #{pane_dead_status}", check=False
    )
    parts = result.stdout.split()
    if result.code != 0 or len(parts) < 2:
        return None
    status = int(parts[2]) if len(parts) > 2 and parts[2].lstrip("-").isdigit() else None
    return Pane(int(parts[0]), parts[1] == "1", status)


def capture(name: str, lines: int = 60) -> str:
    result = _tmux("capture-pane", "-p", "-J", "-t", f"={name}:", "-S", f"-{lines}", check=False)
    return result.stdout.rstrip() if result.code == 0 else ""


def kill_session(name: str) -> None:
    _tmux("kill-session", "-t", f"={name}", check=False)


def kill_server() -> None:
    _tmux("kill-server", check=False)


def sessions() -> list[str]:
    result = _tmux("list-sessions", "-F", "#{session_name}", check=False)
    return result.stdout.split() if result.code == 0 else []


def attach_argv(name: str) -> list[str]:
    """The command a user runs to watch an agent."""
    return [*base_argv(), "attach-session", "-t", f"={name}"]


def attach(name: str, replace_process: bool = False, hint: str = "") -> int:
    """Attach the user's terminal to a session (Hive's own server, so it also works
    from inside the user's tmux). With `replace_process`, become tmux (`hive attach`).
    `hint`: shown in the session's status line while it is attached, which tmux draws itself —
    a line printed just before attaching can be lost: tmux flushes the terminal's pending
    output as it takes it over (tcflush TCOFLUSH), and on Linux a pty then drops what its line
    discipline has not queued for the terminal yet (the fresh-machine flake of issue 44)."""
    if hint:  # one tmux command: three options of the session
        target, shown = f"={name}:", literal(hint)
        _tmux(
            *("set-option", "-t", target, "status", "on", ";"),
            *("set-option", "-t", target, "status-left-length", str(len(hint) + 2), ";"),
            *("set-option", "-t", target, "status-left", shown),
            check=False,
        )
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    if replace_process:
        os.execvpe("tmux", attach_argv(name), env)
    import subprocess  # the user's terminal in the foreground: nothing to capture

    return subprocess.call(attach_argv(name), env=env)
