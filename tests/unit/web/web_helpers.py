"""A Hive project on disk for the dashboard's unit tests: a git repository (the `git_repo`
fixture), plans written as given, task states written as a run would leave them, and a
Starlette TestClient on the app `hive web` serves, at the address it would be bound to."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from hive.store.files import atomic_write
from hive.store.paths import Paths
from hive.store.state import TaskState
from hive.web.app import make_app
from hive.web.security import Guard

CSRF = "the-csrf-token"
PORT = 8765


def plan(root: Path, name: str, body: str, status: str = "approved") -> Path:
    path = root / "plans" / f"{name}.md"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"---\nstatus: {status}\n---\n" + textwrap.dedent(body).lstrip("\n"))
    (root / ".hive").mkdir(exist_ok=True)
    return path


def state(root: Path, plan_name: str, task_id: str, **fields: Any) -> TaskState:
    st = TaskState(plan_name, task_id, updated_at=fields.pop("updated_at", 1000.0), **fields)
    atomic_write(Paths(root).state_file(plan_name, task_id), st.to_json())
    return st


def ask(root: Path, plan_name: str, task_id: str, text: str, options: tuple[str, ...] = (), attempt: int = 1) -> None:
    """An agent's question, as `hive ask` files it."""
    folder = Paths(root).questions_dir(plan_name, task_id)
    folder.mkdir(parents=True, exist_ok=True)
    record = {"attempt": attempt, "text": text, "options": list(options), "details": "", "time": 1001.0}
    (folder / "1.json").write_text(json.dumps(record))


def client(root: Path, token: str = "", read_only: bool = False, host: str = "127.0.0.1") -> TestClient:
    guard = Guard(host, PORT, token, CSRF, read_only)
    return TestClient(make_app(root, guard), base_url=f"http://{host}:{PORT}", follow_redirects=False)
