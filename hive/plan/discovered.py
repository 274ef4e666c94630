"""Work an agent discovers on the way: `hive discover` files it under
`.hive/discovered/`; only a human's `hive approve` adds it to the plan (humans own
plans/), so it never runs unapproved."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from hive.errors import HiveError
from hive.plan.model import Plan
from hive.settings.config import Config
from hive.store.agent_signals import AgentIdentity
from hive.store.files import SMALL, NotAFile, atomic_write, create_exclusive, list_untrusted, read_untrusted
from hive.store.names import SAFE_RE, task_key
from hive.store.paths import Paths

PREFIX = "D"


@dataclass(frozen=True)
class Discovered:
    plan: str
    id: str
    title: str
    details: str
    discovered_from: str
    path: Path

    @property
    def key(self) -> str:
        return task_key(self.plan, self.id)


def file_item(who: AgentIdentity, title: str, details: str) -> tuple[str, bool]:
    """Record a discovered task (agents only signal: this is not the plan). Returns its
    key, and False when the plan already had an item of that title: a retry's agent
    re-discovers what the attempt before it filed, and a human reviews it once."""
    title = " ".join(title.split())
    if not title:
        raise HiveError('hive discover needs a title, e.g. hive discover "Add rate limiting" --details "..."')
    paths = Paths(who.root)
    same = _filed(paths, who.plan, title[:150])
    if same is not None:
        return task_key(who.plan, same), False
    payload = json.dumps(
        {
            "title": title[:150],
            "details": details,
            "discovered_from": who.key,
            "attempt": who.attempt,
            "time": time.time(),
        }
    )
    n = 1
    while paths.discovered_item(who.plan, f"{PREFIX}{n}", settled=True).exists() or not create_exclusive(
        paths.discovered_item(who.plan, f"{PREFIX}{n}"), payload
    ):
        n += 1
    return task_key(who.plan, f"{PREFIX}{n}"), True


def file_found(who: AgentIdentity, item: str | bytes) -> bool:
    """An item `who` filed where it runs (a Ray node, a sandbox's own folder: its JSON), filed
    here in its plan's folder (a second time is found filed already: the same title). False if
    it is not an item (not a JSON object with a title): dropped."""
    data = json.loads(item)
    if not isinstance(data, dict) or not str(data.get("title", "")).strip():
        return False
    file_item(who, str(data["title"]), str(data.get("details", "")))
    return True


def take_found(who: AgentIdentity) -> int:
    """File what `who`, a sandboxed attempt, discovered into its own folder (`Paths.found_dir`),
    then empty it; how many it filed. Each is removed only once filed: a crash files it again,
    found. The folder is the agent's: what is not an item there (a FIFO, a link to /dev/zero, a
    huge file, a million files beyond the first ENTRIES) is dropped, never read (issue 37)."""
    folder = Paths(who.root).found_dir(who.plan, who.task_id, who.attempt)
    try:
        names = list_untrusted(folder)
    except (FileNotFoundError, NotAFile):
        return 0
    filed = 0
    for name in sorted((n for n in names if n.endswith(".json")), key=lambda n: (len(n), n)):
        path = folder / name
        try:
            filed += file_found(who, read_untrusted(path, SMALL))
        except (OSError, ValueError, NotAFile):  # half-written by a killed agent, or not an item at all
            pass
        path.unlink(missing_ok=True)
    if folder.is_dir():
        try:
            folder.rmdir()  # the attempt is over; anything it left there that is not an item stays
        except OSError:
            pass
    return filed


def _filed(paths: Paths, plan: str, title: str) -> str | None:
    """The item of this plan with this title (case aside), waiting or already answered."""
    folder = paths.discovered_dir(plan)
    for f in sorted([*_items(folder), *_items(folder / "settled")]):
        filed = _read_item(f)
        if filed is not None and str(filed.get("title", "")).casefold() == title.casefold():
            return f.stem
    return None


def _items(folder: Path) -> list[Path]:
    """The items' files in `folder` (an agent that runs unsandboxed could write it too)."""
    try:
        return [folder / n for n in list_untrusted(folder) if n.endswith(".json")]
    except (FileNotFoundError, NotAFile):
        return []


def _read_item(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(read_untrusted(path, SMALL))
    except (OSError, ValueError, NotAFile):
        return None
    return data if isinstance(data, dict) else None


def pending(paths: Paths) -> list[Discovered]:
    out = []
    try:
        plans = sorted(list_untrusted(paths.discovered))
    except (FileNotFoundError, NotAFile):
        return []
    for plan in plans:
        for f in sorted(_items(paths.discovered / plan)):
            data = _read_item(f)
            if data is None or not SAFE_RE.match(f.stem) or not SAFE_RE.match(plan):
                continue
            out.append(
                Discovered(
                    plan,
                    f.stem,
                    str(data.get("title", "")),
                    str(data.get("details", "")),
                    str(data.get("discovered_from", "")),
                    f,
                )
            )
    return out


def find(paths: Paths, plan: str, item: str) -> Discovered | None:
    return next((d for d in pending(paths) if d.plan == plan and d.id == item), None)


def approve(paths: Paths, config: Config, plan: Plan, item: Discovered) -> str:
    """Append the item to its plan as a new task, keeping every other byte of the file."""
    ids = {t.id for t in plan.tasks}
    task_id, n = item.id, 2
    while task_id in ids:
        task_id, n = f"{item.id}-{n}", n + 1
    original = plan.path.read_bytes()
    text = original.decode("utf-8")
    details = "\n".join(f"> {line}" if line.strip() else ">" for line in item.details.splitlines())
    section = (
        f"\n### Task {task_id}: {item.title}\n**Depends on:** none\n"
        f"**Discovered from:** {item.discovered_from}\n\n{details}\n"
    )
    atomic_write(plan.path, text + ("" if text.endswith("\n") else "\n") + section)
    from hive.plan.graph import load_plan  # networkx: not for every run that imports this (~0.2 s)

    _, _, problems = load_plan(plan.path, config)
    if problems:
        atomic_write(plan.path, text)  # never leave the human's plan broken
        raise HiveError(*problems, f"{item.key} was not added: the plan would not be valid")
    _settle(paths, item, "approved")
    return f"{item.key} added to {plan.path.name} as task {plan.name}:{task_id}"


def reject(paths: Paths, item: Discovered, why: str) -> str:
    _settle(paths, item, f"rejected: {why}")
    return f"{item.key} discarded"


def _settle(paths: Paths, item: Discovered, outcome: str) -> None:
    data = _read_item(item.path)
    if data is None:
        raise HiveError(f"{item.key}: {item.path} is no longer an item to settle (`hive status` lists those waiting)")
    atomic_write(paths.discovered_item(item.plan, item.id, settled=True), json.dumps({**data, "outcome": outcome}))
    item.path.unlink()
