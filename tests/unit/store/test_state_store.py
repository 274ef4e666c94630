"""hive/store/state.py: task state files, compare-and-swap updates, attempt history, events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hive.store.state as state_module
from hive.errors import HiveError
from hive.lifecycle import INTERRUPTED, State
from hive.store.paths import Paths
from hive.store.state import StaleState, StateCache, StateStore, TaskState


@pytest.fixture
def store(tmp_path: Path) -> StateStore:
    return StateStore(Paths(tmp_path))


def events(store: StateStore) -> list[dict]:
    path = store.paths.events
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def running(store: StateStore, attempt: int = 1, used: int = 1) -> TaskState:
    return store.update(
        "auth",
        "1",
        expect=(State.PLANNED,),
        state=State.IN_PROGRESS,
        attempt=attempt,
        attempts_used=used,
        branch="hive/b",
        base="c0",
        worker="w1",
        log_offset=17,
    )


def test_an_unrecorded_task_reads_as_planned(store: StateStore):
    assert store.read("auth", "1") == TaskState("auth", "1")
    assert not store.paths.state_file("auth", "1").exists()


def test_update_writes_the_whole_state_and_reads_it_back(store: StateStore):
    new = running(store)
    assert new.state == State.IN_PROGRESS and new.attempt == 1 and new.updated_at > 0
    assert store.read("auth", "1") == new
    assert store.read_all() == {"auth:1": new}


def test_update_with_a_stale_expectation_raises_and_writes_nothing(store: StateStore):
    running(store)
    path = store.paths.state_file("auth", "1")
    before, logged = path.read_bytes(), events(store)
    with pytest.raises(StaleState) as stale:
        store.update("auth", "1", expect=(State.PLANNED, State.FAILED), state=State.IN_PROGRESS, attempt=2)
    assert stale.value.current.state == State.IN_PROGRESS and stale.value.current.attempt == 1
    assert "auth:1 is in_progress" in str(stale.value)
    assert path.read_bytes() == before and events(store) == logged


def test_an_invalid_transition_raises_and_writes_nothing(store: StateStore):
    with pytest.raises(ValueError, match="planned → done is not a valid transition"):
        store.update("auth", "1", state=State.DONE)
    assert not store.paths.state_file("auth", "1").exists()
    assert events(store) == []


def test_every_state_change_appends_one_event_and_other_changes_none(store: StateStore):
    st = running(store)
    store.update("auth", "1", agent_token=99)  # no state change, no event
    store.update("auth", "1", event="stuck: no output for 15m")  # an explicit event
    store.close_attempt(st, State.DONE, "merged")
    logged = events(store)
    assert [(e["from"], e["to"], e["event"]) for e in logged] == [
        ("planned", "in_progress", "in_progress"),
        ("in_progress", "in_progress", "stuck: no output for 15m"),
        ("in_progress", "done", "done"),
    ]
    assert all(e["task"] == "auth:1" and e["attempt"] == 1 for e in logged)
    assert logged[-1]["reason"] == "merged"


def test_close_attempt_appends_one_history_entry(store: StateStore):
    st = running(store)
    closed = store.close_attempt(
        st, State.FAILED, "crashed: the agent exited", outcome="crashed", output_tail="Traceback"
    )
    assert closed.state == State.FAILED and closed.reason == "crashed: the agent exited"
    assert closed.output_tail == "Traceback"
    assert len(closed.history) == 1
    entry = closed.history[0]
    assert (entry["attempt"], entry["outcome"], entry["reason"]) == (1, "crashed", "crashed: the agent exited")
    assert (entry["branch"], entry["base"], entry["worker"], entry["log_offset"]) == ("hive/b", "c0", "w1", 17)
    again = store.update("auth", "1", expect=(State.FAILED,), state=State.IN_PROGRESS, attempt=2)
    second = store.close_attempt(again, State.BLOCKED, "blocked: why")
    assert [h["outcome"] for h in second.history] == ["crashed", "blocked"]  # outcome defaults to the state
    assert store.read("auth", "1").history == second.history


@pytest.mark.parametrize(("used", "left"), [(2, 1), (1, 0), (0, 0)])
def test_mark_interrupted_gives_the_attempt_back(store: StateStore, used: int, left: int):
    st = running(store, used=used)
    marked = store.mark_interrupted(st)
    assert marked.state == State.FAILED and marked.reason == INTERRUPTED and marked.attempts_used == left
    assert marked.history[-1]["outcome"] == INTERRUPTED
    assert events(store)[-1]["event"].startswith("interrupted")


def test_mark_interrupted_refuses_a_task_that_is_no_longer_running(store: StateStore):
    st = running(store)
    store.close_attempt(st, State.DONE, "merged")
    with pytest.raises(StaleState):
        store.mark_interrupted(st)
    assert store.read("auth", "1").state == State.DONE


def test_from_dict_reads_state_written_by_an_older_hive(store: StateStore):
    st = TaskState.from_dict(
        {
            "plan": "auth",
            "id": "1",
            "state": "in_progress",
            "pane_pid": 4242,
            "attempts": 2,
            "files": ["a.py"],
            "history": [{"attempt": 1}],
            "retired_field": "x",
        }
    )
    assert st.agent_token == 4242 and st.attempts_used == 2
    assert st.files == ("a.py",) and st.history == ({"attempt": 1},)
    path = store.paths.state_file("auth", "2")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"plan": "auth", "id": "2", "pane_pid": 7, "unknown": 1}))
    assert store.read("auth", "2").agent_token == 7


def test_to_json_round_trips(store: StateStore):
    st = store.close_attempt(running(store), State.FAILED, "x", files=("a.py", "b.py"))
    assert TaskState.from_dict(json.loads(st.to_json())) == st


@pytest.mark.parametrize(
    "text", ["{not json", "", '{"plan": "auth"}', '{"plan": "auth", "id": "1", "files": 3}', "null", "[]", "3"]
)
def test_a_corrupt_state_file_is_an_error_naming_the_file(store: StateStore, text: str):
    path = store.paths.state_file("auth", "1")
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(HiveError) as err:
        store.read("auth", "1")
    assert str(path) in str(err.value) and "move the file away" in str(err.value)


def test_read_all_skips_unreadable_files(store: StateStore):
    running(store)
    store.paths.state_file("auth", "2").write_text("{half")
    store.paths.state_file("auth", "3").write_text("null")
    assert set(store.read_all()) == {"auth:1"}


def test_a_mark_is_an_event_line_alone_and_leaves_the_state_file_as_it_was(store: StateStore):
    st = running(store)
    path = store.paths.state_file("auth", "1")
    before = path.stat().st_mtime_ns, path.read_text()
    store.mark(st, "checking")
    assert (path.stat().st_mtime_ns, path.read_text()) == before
    last = events(store)[-1]
    assert last["task"] == "auth:1" and last["event"] == "checking" and last["attempt"] == 1
    assert last["from"] == last["to"] == "in_progress"


def test_a_state_cache_parses_again_only_the_files_replaced_since_it_last_read(store: StateStore, monkeypatch):
    running(store)
    store.update("auth", "2", state=State.PLANNED, reason="first")
    parsed: list[str] = []
    real = state_module._parsed
    monkeypatch.setattr(state_module, "_parsed", lambda path: parsed.append(path) or real(path))
    cache = StateCache(store.paths)
    assert set(cache.read_all()) == {"auth:1", "auth:2"} and len(parsed) == 2
    parsed.clear()
    store.update("auth", "2", reason="second")
    states = cache.read_all()
    assert parsed == [str(store.paths.state_file("auth", "2"))], "only the file replaced"
    assert states["auth:2"].reason == "second" and states["auth:1"] == store.read("auth", "1")
    store.paths.state_file("auth", "1").unlink()
    assert set(cache.read_all()) == {"auth:2"}, "a state removed is gone"
