"""Human answers: approving a plan file, and (for now) a checkpoint task."""
from __future__ import annotations

import re
from pathlib import Path

from hive.config import Config
from hive.errors import HiveError
from hive.fsutil import atomic_write
from hive.graph import load_plan
from hive.names import split_key
from hive.paths import Paths
from hive.state import StateStore

_STATUS_LINE = re.compile(r"^(status\s*:\s*)(\S.*?)?\s*$", re.MULTILINE)


def approve_plan(path: Path, config: Config) -> str:
    """Validate the plan (every error at once) and set `status: approved` in its front
    matter, leaving every other byte of the file as it was."""
    if not path.is_file():
        raise HiveError(f"{path}: no such plan file")
    plan, _, problems = load_plan(path, config)
    if problems:
        raise HiveError(*problems, f"{path}: not approved — fix the problems above and run `hive approve` again")
    text = path.read_bytes().decode("utf-8")  # bytes: keep every line ending as it is
    newline = "\r\n" if "\r\n" in text else "\n"
    if text.startswith("---"):
        end = text.find(f"{newline}---", 3)
        head, rest = text[:end], text[end:]
        if _STATUS_LINE.search(head):
            head = _STATUS_LINE.sub(lambda m: f"{m.group(1)}approved", head, count=1)
        else:
            head = head + f"{newline}status: approved"
        new = head + rest
    else:
        new = f"---{newline}status: approved{newline}---{newline}" + text
    if new != text:
        atomic_write(path, new)
    return f"{plan.name}: approved ({len(plan.tasks)} tasks) — run `doit` to start"


def approve_checkpoint(root: Path, key: str) -> str:
    try:
        plan, task_id = split_key(key)
    except ValueError:
        raise HiveError(f"{key!r}: expected a plan file or a task like plan:ID") from None
    store = StateStore(Paths(root))
    st = store.read(plan, task_id)
    if st.state != "awaiting_human":
        raise HiveError(f"{key} is {st.state}, not awaiting an answer")
    if st.resume == "review":
        store.update(plan, task_id, expect=("awaiting_human",), state="planned", resume="merge",
                     reason="branch approved for merging", event="review approved")
        return f"{key}: approved — the next `doit` merges branch {st.branch}"
    store.update(plan, task_id, expect=("awaiting_human",), state="done", reason="approved by a human",
                 merge_commit=_main_head(root), event="approved")
    return f"{key}: approved — run `doit` to continue"


def _main_head(root: Path) -> str:
    from hive import git
    from hive.config import load_repo_config
    return git.rev_parse(root, f"refs/heads/{load_repo_config(root).main_branch}")
