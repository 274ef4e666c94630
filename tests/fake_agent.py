#!/usr/bin/env python3
"""A stand-in for an LLM coding agent, used by the tests.

Hive starts it like a real agent: in the task's worktree, inside tmux, with the
context file's path as its argument. It reads the context file and follows
`fake:` directives found in it (they come from the task's description):

    fake: write PATH TEXT...     write a file (TEXT may use \\n)
    fake: append PATH TEXT...    append a line to a file
    fake: delete PATH            delete a file
    fake: commit MESSAGE...      git add -A && git commit
    fake: commit-once MESSAGE... the same, exactly once per branch: nothing happens if
                                 HEAD's history already has a commit with this message (a
                                 re-attempt continuing the last one's commits), and the commit
                                 is empty if Hive already committed the files (its "unfinished
                                 work" commit of an interrupted attempt)
    fake: print TEXT...          print a line
    fake: git ARGS...            run git (e.g. `git merge main`), whatever its exit status
    fake: env NAME               print NAME=<its value in the agent's environment>
    fake: write-env PATH NAME... write a file of NAME=<its value> lines (the agent's environment)
    fake: sleep SECONDS          sleep
    fake: wait-for PATH          wait until PATH exists (relative to $HIVE_ROOT)
    fake: wait-start TASK SECS   wait until TASK's agent has started; crash if it does not within SECS
    fake: note TEXT...           hive note TEXT
    fake: discover TITLE [DETAILS]  hive discover TITLE --details DETAILS
    fake: signal KIND [REASON]   hive done | blocked | too-big
    fake: ask QUESTION [OPTIONS] hive ask QUESTION [--options OPTIONS]; the answer it prints
                                 replaces {answer} in the directives after it. A brief that
                                 already answers QUESTION (a continuation attempt) is used
                                 instead of asking again; with no answer yet it notes where
                                 it is and exits 0, as `hive ask` tells it to
    fake: signal-login KIND      the same from a shell whose PATH was reset (like codex's `bash -lc`
                                 on Debian), using the command the brief gives for that case
    fake: crash [CODE]           exit with CODE (default 3) without signalling
    fake: try-write PATH         try to create PATH; print "try-write PATH: ok" or ": denied (error)"
    fake: try-read PATH          try to read PATH; print "try-read PATH: ok", ": denied (error)"
    fake: try-git DIR ARGS...    run `git -C DIR ARGS`; print "try-git DIR ARGS: exit N"
    fake: try-url URL            GET URL (through HTTP_PROXY if set); print "try-url URL: ok BODY"
                                 or ": denied (HTTP 403)" or ": failed (error)"
    fake: try-connect HOST PORT  open a TCP connection directly; print "try-connect HOST PORT: ok"
                                 or ": failed (error)"
    fake: silent                 print nothing and wait forever
    fake: hang                   wait forever (after printing)
    fake: dump-context           copy the context file to .hive/fake/context-<task>-a<N>.md
    fake: trap                   ignore SIGINT, SIGTERM and SIGHUP from now on (only SIGKILL stops it)
    fake: leave KIND             leave a trap for Hive in a folder it may write (issue 37): signal-fifo,
                                 signal-zero (its signal file a FIFO, a link to /dev/zero), ref-fifo,
                                 objects-fifo (in its private git directory: sandboxed only), question-fifo,
                                 found-zero, notes-flood (2 MB with no newline in its notes file)
    fake: spawn-child            start a child in its own process group that ignores them too;
                                 its pid goes to .hive/fake/child-<task>-a<N>.pid

A directive written `fake@2:` applies only to attempt 2. A reviewer (engine/review.py) follows
`fake-review:` and `fake-review@R:` (review round R) instead, e.g. `fake-review@1: signal changes
"use tabs"` then `fake-review@2: signal done`. Every start is logged
to $HIVE_ROOT/.hive/fake/spawns.log as "<task> <attempt> <time> start" ($FAKE_LOG_DIR
instead of $HIVE_ROOT/.hive/fake if set: on a Ray node HIVE_ROOT is the node's own).

A directive that fails because the world changed under the agent (its worktree
deleted, a git command refused) ends the agent with exit code 4 and one line
saying why, like a real agent giving up — never a Python traceback, which would
look like a Hive bug in Hive's own output.
"""

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path


def try_url(url: str) -> str:
    """GET `url` as any client would (urllib honours HTTP_PROXY): what came of it."""
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return "ok " + r.read().decode(errors="replace").strip()
    except urllib.error.HTTPError as e:
        return f"denied (HTTP {e.code})"
    except (OSError, ValueError) as e:
        return f"failed ({e})"


def main() -> int:
    context = Path(sys.argv[1])
    root = Path(os.environ["HIVE_ROOT"])
    task = os.environ["HIVE_TASK"]
    attempt = os.environ["HIVE_ATTEMPT"]
    log_dir = Path(os.environ.get("FAKE_LOG_DIR") or root / ".hive" / "fake")
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "spawns.log", "a") as f:
        f.write(f"{task} {attempt} {time.time():.3f} start\n")
    try:
        return follow(context, root, task, attempt, log_dir)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"fake agent: giving up: {e}", flush=True)
        return 4


def leave(kind: str, root: Path, task: str) -> None:
    """A trap in a folder this agent may write, where Hive will read it."""
    from hive.store.paths import Paths  # the agent's own Python has Hive: the tests run it so

    paths, (plan, task_id) = Paths(root), task.split(":", 1)
    signal_file = Path(os.environ["HIVE_SIGNAL_FILE"])
    if kind == "signal-fifo":
        os.mkfifo(signal_file)
    elif kind == "signal-zero":
        os.symlink("/dev/zero", signal_file)
    elif kind in ("ref-fifo", "objects-fifo"):
        gitdir = Path(
            subprocess.run(["git", "rev-parse", "--absolute-git-dir"], capture_output=True, text=True).stdout.strip()
        )
        if not gitdir.is_relative_to(root / ".hive" / "gitdirs"):
            raise SystemExit("fake agent: leave: not sandboxed (no private git directory)")
        if kind == "ref-fifo":
            ref = (
                gitdir / subprocess.run(["git", "symbolic-ref", "HEAD"], capture_output=True, text=True).stdout.strip()
            )
            ref.unlink()
            os.mkfifo(ref)
        else:
            os.mkfifo(gitdir / "objects" / "info" / "commit-graph")
    elif kind == "question-fifo":
        os.mkfifo(paths.questions_dir(plan, task_id) / "999.json")
    elif kind == "found-zero":
        os.symlink("/dev/zero", paths.discovered_dir(plan) / "D999.json")
    elif kind == "notes-flood":
        with open(paths.notes_file(plan, task_id), "a") as f:
            f.write("x" * 2_000_000)
    else:
        raise SystemExit(f"fake agent: leave: unknown trap {kind!r}")


def _prefixes(attempt: str) -> tuple[str, str]:
    """An author follows `fake:` and `fake@N:` (its attempt N); a reviewer (HIVE_REVIEW, its brief
    holds the author's directives too) follows `fake-review:` and `fake-review@N:` (its round N)."""
    review = re.search(r"-r(\d+)t\d+$", os.environ.get("HIVE_REVIEW", ""))
    if review:
        return "fake-review:", f"fake-review@{review.group(1)}:"
    return "fake:", f"fake@{attempt}:"


def follow(context: Path, root: Path, task: str, attempt: str, log_dir: Path) -> int:
    text = context.read_text()
    directives = []
    for line in text.splitlines():
        line = line.strip()
        for prefix in _prefixes(attempt):
            if line.startswith(prefix):
                directives.append(shlex.split(line[len(prefix) :]))
    if not any(d and d[0] == "silent" for d in directives):
        print(f"fake agent: working on {task} attempt {attempt}", flush=True)
    answer = ""
    for d in directives:
        if not d:
            continue
        # `\x1b` and `\x07` written in a directive are those bytes: a hostile agent's text (issue 44)
        verb, args = (
            d[0],
            [a.replace("{answer}", answer).replace("\\x1b", "\x1b").replace("\\x07", "\x07") for a in d[1:]],
        )
        if verb == "write":
            p = Path(args[0])
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(" ".join(args[1:]).replace("\\n", "\n") + "\n")
        elif verb == "append":
            with open(args[0], "a") as f:
                f.write(" ".join(args[1:]) + "\n")
        elif verb == "delete":
            Path(args[0]).unlink()
        elif verb == "commit":
            subprocess.run(["git", "add", "-A"], check=True)
            subprocess.run(["git", "commit", "-q", "-m", " ".join(args) or "fake work"], check=True)
        elif verb == "commit-once":
            message = " ".join(args) or "fake work"
            history = subprocess.run(
                ["git", "log", "--format=%s", "HEAD"], capture_output=True, text=True, check=True
            ).stdout.splitlines()
            if message not in history:
                subprocess.run(["git", "add", "-A"], check=True)
                subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], check=True)
        elif verb == "print":
            print(" ".join(args), flush=True)
        elif verb == "print-colour":  # as a TUI prints: colour codes, a spinner overwritten by \r
            print(f"\x1b[31m{' '.join(args)}\x1b[0m", flush=True)
            print("⠋ thinking\r⠙ thinking\r\x1b[2Kdone thinking", flush=True)
        elif verb == "git":  # any git command; its failure (a merge conflict) is not the agent's end
            subprocess.run(["git", *args], check=False)
        elif verb == "env":
            print(f"{args[0]}={os.environ.get(args[0], '<unset>')}", flush=True)
        elif verb == "write-env":
            Path(args[0]).write_text("".join(f"{n}={os.environ.get(n, '<unset>')}\n" for n in args[1:]))
        elif verb == "wait-for":
            while not (root / args[0]).exists():
                time.sleep(0.05)
        elif verb == "wait-start":
            deadline = time.time() + float(args[1])
            while not any(
                ln.startswith(f"{args[0]} ") and ln.endswith(" start")
                for ln in (log_dir / "spawns.log").read_text().splitlines()
            ):
                if time.time() > deadline:
                    print(f"fake agent: {args[0]} never started alongside me", flush=True)
                    return 9
                time.sleep(0.05)
        elif verb == "sleep":
            time.sleep(float(args[0]))
        elif verb == "note":
            subprocess.run(["hive", "note", " ".join(args)], check=True)
        elif verb == "discover":
            details = " ".join(args[1:]).replace("\\n", "\n")
            subprocess.run(["hive", "discover", args[0], "--details", details], check=True)
        elif verb == "ask":
            answer = ask(text, args)
            if answer is None:
                return 0
        elif verb == "signal":
            kind, reason = args[0], " ".join(args[1:])
            # logged first: Hive may end this session the moment the signal lands
            with open(log_dir / "spawns.log", "a") as f:
                f.write(f"{task} {attempt} {time.time():.3f} signal-{kind}\n")
            cmd = ["hive", kind] + (["--reason", reason] if reason else [])
            subprocess.run(cmd, check=True)
        elif verb == "signal-login":
            with open(log_dir / "spawns.log", "a") as f:
                f.write(f"{task} {attempt} {time.time():.3f} signal-{args[0]}\n")
            hive = re.search(r"the same command is\s+`([^`]+)`", text).group(1)  # type: ignore[union-attr]
            subprocess.run(["env", "PATH=/usr/bin:/bin", "sh", "-c", f"{hive} {args[0]}"], check=True)
        elif verb == "try-write":
            try:
                with open(args[0], "x") as f:
                    f.write("written from a sandbox\n")
                said = "ok"
            except OSError as e:
                said = f"denied ({e.strerror})"
            print(f"fake agent: try-write {args[0]}: {said}", flush=True)
        elif verb == "try-read":
            try:
                Path(args[0]).read_bytes()
                said = "ok"
            except OSError as e:
                said = f"denied ({e.strerror})"
            print(f"fake agent: try-read {args[0]}: {said}", flush=True)
        elif verb == "try-git":
            done = subprocess.run(["git", "-C", *args], capture_output=True, text=True, check=False)
            print(f"fake agent: try-git {' '.join(args)}: exit {done.returncode}", flush=True)
        elif verb == "try-url":
            print(f"fake agent: try-url {args[0]}: {try_url(args[0])}", flush=True)
        elif verb == "try-connect":
            try:
                socket.create_connection((args[0], int(args[1])), timeout=5).close()
                said = "ok"
            except OSError as e:
                said = f"failed ({e.strerror or e})"
            print(f"fake agent: try-connect {args[0]} {args[1]}: {said}", flush=True)
        elif verb == "crash":
            return int(args[0]) if args else 3
        elif verb in ("silent", "hang"):
            while True:
                time.sleep(60)
        elif verb == "trap":
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)
            print("fake agent: ignoring SIGINT, SIGTERM and SIGHUP", flush=True)
        elif verb == "leave":
            leave(args[0], root, task)
            print(f"fake agent: left a {args[0]} for Hive", flush=True)
        elif verb == "spawn-child":
            code = (
                "import signal, time\n"
                "for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP): signal.signal(s, signal.SIG_IGN)\n"
                "time.sleep(3600)\n"
            )
            child = subprocess.Popen([sys.executable, "-c", code], process_group=0)
            safe = task.replace(":", "_")
            (log_dir / f"child-{safe}-a{attempt}.pid").write_text(str(child.pid))
        elif verb == "dump-context":
            safe = task.replace(":", "_")
            (log_dir / f"context-{safe}-a{attempt}.md").write_text(text)
    # Like an interactive agent, stay alive after signalling until Hive ends the session.
    while True:
        time.sleep(60)


def ask(brief: str, args: list[str]) -> str | None:
    """The answer to the question: from the brief if a human answered it already, else
    from `hive ask` (None: no answer yet, and the agent was told to end its session)."""
    known = re.search(re.escape(f"**{args[0]}**") + r".*\n\s*Answer: (.*)", brief)
    if known:
        print(f"fake agent: my brief answers {args[0]!r}: {known.group(1)}", flush=True)
        return known.group(1).strip()
    cmd = ["hive", "ask", args[0]] + (["--options", args[1]] if len(args) > 1 else [])
    asked = subprocess.run(cmd, capture_output=True, text=True, check=False)
    print(asked.stderr + asked.stdout, end="", flush=True)
    if asked.returncode != 0:
        subprocess.run(["hive", "note", f"waiting for the answer to {args[0]!r}"], check=True)
        return None
    return asked.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
