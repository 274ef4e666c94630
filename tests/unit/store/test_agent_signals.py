"""hive/store/agent_signals.py: one signal file per attempt, the first signal wins, who is signalling."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive.errors import HiveError
from hive.lifecycle import SIGNALS, Kind
from hive.store import agent_signals
from hive.store.agent_signals import AgentIdentity
from hive.store.paths import Paths


@pytest.fixture
def who(tmp_path: Path) -> AgentIdentity:
    return AgentIdentity(tmp_path, "auth", "2.1", 3)


def signal_path(who: AgentIdentity) -> Path:
    return Paths(who.root).signal_file(who.plan, who.task_id, who.attempt)


@pytest.mark.parametrize("kind", sorted(SIGNALS.values()))
def test_a_sent_signal_reads_back(who: AgentIdentity, kind: Kind):
    assert agent_signals.send(who, kind, "the reason")
    sig = agent_signals.read(signal_path(who))
    assert sig is not None and (sig.kind, sig.reason) == (kind, "the reason") and sig.time > 0


def test_the_first_signal_wins(who: AgentIdentity):
    assert agent_signals.send(who, Kind.BLOCKED, "needs a key") is True
    assert agent_signals.send(who, Kind.DONE, "") is False
    sig = agent_signals.read(signal_path(who))
    assert sig is not None and (sig.kind, sig.reason) == (Kind.BLOCKED, "needs a key")
    assert [p.name for p in signal_path(who).parent.iterdir()] == [signal_path(who).name]  # no temp files left


def test_each_attempt_has_its_own_signal(who: AgentIdentity):
    older = AgentIdentity(who.root, who.plan, who.task_id, who.attempt - 1)
    assert agent_signals.send(older, Kind.DONE, "")
    assert agent_signals.read(signal_path(who)) is None
    assert agent_signals.send(who, Kind.TOO_BIG, "split it")


@pytest.mark.parametrize("kind", [Kind.STOPPED, Kind.CRASHED, Kind.TIMEOUT, Kind.SPAWN_FAILED])
def test_only_the_signal_kinds_can_be_sent(who: AgentIdentity, kind: Kind):
    with pytest.raises(ValueError):
        agent_signals.send(who, kind, "")
    assert not signal_path(who).exists()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{half",
        '{"reason": "x"}',
        '{"signal": "crashed"}',
        '{"signal": "nope"}',
        "[]",
        "null",
        '"done"',
        '{"signal": ["done"]}',
    ],
)
def test_read_ignores_a_corrupt_or_unknown_signal(tmp_path: Path, text: str):
    path = tmp_path / "s.json"
    path.write_text(text)
    assert agent_signals.read(path) is None


def test_read_of_a_signal_with_an_unreadable_time_keeps_the_signal(tmp_path: Path):
    path = tmp_path / "s.json"
    path.write_text('{"signal": "done", "reason": "ok", "time": "soon"}')
    sig = agent_signals.read(path)
    assert sig is not None and sig.kind == "done" and sig.reason == "ok" and sig.time == 0.0


def test_read_of_a_missing_file_is_none(tmp_path: Path):
    assert agent_signals.read(tmp_path / "none.json") is None


# --- AgentIdentity.from_env ---------------------------------------------------------------------


def set_env(monkeypatch: pytest.MonkeyPatch, root: Path, task: str | None, attempt: str | None) -> None:
    monkeypatch.setenv("HIVE_ROOT", str(root))
    for name, value in (("HIVE_TASK", task), ("HIVE_ATTEMPT", attempt)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


def test_from_env_reads_who_is_signalling(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    set_env(monkeypatch, tmp_path, "auth:2.1", "3")
    assert AgentIdentity.from_env() == AgentIdentity(tmp_path, "auth", "2.1", 3)


@pytest.mark.parametrize(("task", "attempt"), [(None, "1"), ("auth:1", None), ("auth:1", "one"), ("", "1")])
def test_from_env_outside_a_hive_agent_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, task: str | None, attempt: str | None
):
    set_env(monkeypatch, tmp_path, task, attempt)
    with pytest.raises(HiveError, match="HIVE_TASK, HIVE_ATTEMPT and HIVE_ROOT are not set"):
        AgentIdentity.from_env()


def test_from_env_without_a_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    set_env(monkeypatch, tmp_path, "auth:1", "1")
    monkeypatch.delenv("HIVE_ROOT")
    with pytest.raises(HiveError, match="HIVE_ROOT"):
        AgentIdentity.from_env()


@pytest.mark.parametrize(
    ("task", "words"),
    [
        ("auth", "is not <plan>:<ID>"),
        ("../x:1", "is not a Hive task name"),
        ("auth:../../x", "is not a Hive task name"),
        ("au.th:1", "is not a Hive task name"),
    ],
)
def test_from_env_rejects_a_malformed_task(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, task: str, words: str):
    set_env(monkeypatch, tmp_path, task, "1")
    with pytest.raises(HiveError, match=words):
        AgentIdentity.from_env()
