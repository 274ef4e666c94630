"""Names built from plan IDs: branches, worktree dirs, tmux sessions, file paths, a task's
Docker Compose project.

A slug alone could collide (`auth:2.1` vs `auth:2_1`), so every name carries a
short hash of the full task name; every name is a valid git ref and tmux target.
"""

from __future__ import annotations

import hashlib
import re

# \Z, not $: "$" also matches before a trailing newline ("1\n" is no ID)
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")
SAFE_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*\Z")  # IDs plus Hive's own `_gate-...`
PLAN_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*\Z")


def slug(text: str, limit: int = 24) -> str:
    s = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-_")
    return s[:limit].rstrip("-_") or "x"


def short_hash(text: str, n: int = 6) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:n]


def task_key(plan: str, task_id: str) -> str:
    """The doit task name, also what users type: `<plan>:<ID>`."""
    return f"{plan}:{task_id}"


def stem(plan: str, task_id: str) -> str:
    """Filesystem/ref-safe unique name for a task (no attempt)."""
    return f"{slug(plan, 16)}-{slug(task_id)}-{short_hash(task_key(plan, task_id))}"


def attempt_name(plan: str, task_id: str, attempt: int) -> str:
    return f"{stem(plan, task_id)}-a{attempt}"


def review_name(plan: str, task_id: str, attempt: int, round_: int, try_: int) -> str:
    """A review of an attempt's change (engine/review.py): its round, and its try in it (a review
    that failed is tried once more). Its session's name, its folder's, its files'."""
    return f"{attempt_name(plan, task_id, attempt)}-r{int(round_)}t{int(try_)}"


def branch(plan: str, task_id: str, attempt: int) -> str:
    return f"hive/{attempt_name(plan, task_id, attempt)}"


def forge_branch(plan: str, task_id: str) -> str:
    """The task's branch on the forge (pull-request mode): `hive/<plan>/<ID>`, as people read it;
    an ID git would refuse in a ref name (`..`, a trailing `.` or `.lock`) takes its stem instead."""
    if ".." in task_id or task_id.endswith((".", ".lock")):
        return f"hive/{plan}/{stem(plan, task_id)}"
    return f"hive/{plan}/{task_id}"


def worker_id(number: int) -> str:
    return f"w{number}"


def worker_number(worker: str) -> int:
    """`worker_id` read back: "w3" -> 3."""
    return int(worker.removeprefix("w"))


def session(worker: str, plan: str, task_id: str, attempt: int) -> str:
    return f"hive-{worker}-{attempt_name(plan, task_id, attempt)}"


_TASK_SESSION = re.compile(r"^hive-w\d+-.+-a\d+$")


def is_task_session(name: str) -> bool:
    """A task agent's session (not `hive plan`'s `hive-plan-…`, nor anything else)."""
    return bool(_TASK_SESSION.match(name))


def worktree_dir(worker: str, plan: str, task_id: str, attempt: int) -> str:
    return f"{worker}-{attempt_name(plan, task_id, attempt)}"


def spare_dir(worker: str) -> str:
    """The checkout a worker keeps for its next task (`[worktrees] reuse`); never a task's name
    (those end in `-a<attempt>`)."""
    return f"{worker}-spare"


_SPARE = re.compile(r"w(\d+)-spare")


def is_spare(dirname: str) -> bool:
    return _SPARE.fullmatch(dirname) is not None


def spare_owner(spare: str) -> int:
    """Whose spare checkout `spare` (a `spare_dir` name) is: its worker's number."""
    m = _SPARE.fullmatch(spare)
    if m is None:
        raise ValueError(spare)
    return int(m[1])


def worktree_owner(dirname: str, plan: str, task_id: str) -> tuple[int, int] | None:
    """(worker number, attempt) if `dirname` is one of this task's worktrees (`worktree_dir`),
    else None: a checkout's own name says whose ports its services took."""
    m = re.fullmatch(rf"w(\d+)-{re.escape(stem(plan, task_id))}-a(\d+)", dirname)
    return (int(m[1]), int(m[2])) if m else None


def compose_project(plan: str, task_id: str) -> str:
    """The task's `COMPOSE_PROJECT_NAME`: Docker Compose takes lowercase letters, digits, `-`
    and `_`, starting with a letter or digit. Its stem, lowercased, is made of those alone, and
    its hash keeps apart the tasks lowercasing or slugging would merge (`auth:A`, `auth:a`):
    two tasks sharing a project would stop each other's services."""
    return f"hive-{stem(plan, task_id).lower()}"


def module_lock(module: str) -> str:
    return f"{slug(module, 32)}-{short_hash(module, 8)}"


def parse_key(text: str) -> tuple[str, str]:
    """A task the user typed, `<plan>:<ID>`; a clear error otherwise."""
    from hive.errors import HiveError

    try:
        return split_key(text)
    except ValueError:
        raise HiveError(f"{text!r} is not a task; write <plan>:<ID>, e.g. auth:3") from None


def split_key(key: str) -> tuple[str, str]:
    """`plan:ID` → (plan, ID); raises ValueError if malformed."""
    plan, sep, task_id = key.partition(":")
    if not sep or not plan or not task_id:
        raise ValueError(key)
    return plan, task_id
