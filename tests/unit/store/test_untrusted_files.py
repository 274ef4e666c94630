"""hive/store/files.py `read_untrusted` / `list_untrusted`, and every reader of a folder an agent
may write going through them (issue 37): a FIFO is never waited on, a link never followed (to
/dev/zero: read until memory ran out), a huge file never read whole, a million files never listed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hive.lifecycle import Kind
from hive.plan import discovered
from hive.store import agent_signals, questions
from hive.store.agent_signals import AgentIdentity
from hive.store.files import NotAFile, append_line, list_untrusted, read_untrusted
from hive.store.paths import Paths


def _fifo(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    return path


def _zero(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to("/dev/zero")
    return path


def test_a_regular_file_reads_and_a_missing_one_is_not_found(tmp_path: Path):
    (tmp_path / "f").write_bytes(b"hello")
    assert read_untrusted(tmp_path / "f", 10) == b"hello"
    with pytest.raises(FileNotFoundError):
        read_untrusted(tmp_path / "none", 10)


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (_fifo, "a FIFO, not a file"),
        (_zero, "a symbolic link, not a file"),
        (lambda p: (p.mkdir(), p)[1], "a folder, not a file"),
        (lambda p: (p.write_bytes(b"x" * 11), p)[1], "11 bytes, more than the 10 it may hold"),
    ],
)
def test_what_is_not_a_small_regular_file_is_refused_at_once(tmp_path: Path, make, said: str):
    path = make(tmp_path / "f")
    with pytest.raises(NotAFile) as e:
        read_untrusted(path, 10)
    assert e.value.what == said


def test_a_tail_read_keeps_the_last_bytes_of_a_big_file(tmp_path: Path):
    (tmp_path / "f").write_bytes(b"a" * 100 + b"the end")
    assert read_untrusted(tmp_path / "f", 7, tail=True) == b"the end"


def test_a_link_on_the_way_below_within_is_not_followed(tmp_path: Path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "heads").mkdir(parents=True)
    (elsewhere / "heads" / "b").write_text("x")
    (tmp_path / "gitdir").mkdir()
    (tmp_path / "gitdir" / "refs").symlink_to(elsewhere)
    with pytest.raises(NotAFile):
        read_untrusted(tmp_path / "gitdir" / "refs" / "heads" / "b", 10, within=tmp_path / "gitdir")


def test_a_listing_stops_at_its_limit(tmp_path: Path):
    for n in range(50):
        (tmp_path / f"{n}.json").touch()
    assert len(list_untrusted(tmp_path, 20)) == 20
    (tmp_path.parent / "link").symlink_to(tmp_path)
    with pytest.raises(NotAFile):
        list_untrusted(tmp_path.parent / "link")


def test_a_line_appended_after_a_torn_last_line_is_a_line_of_its_own(tmp_path: Path):
    path = tmp_path / "notes.jsonl"
    path.write_text("x" * 1000)
    append_line(path, '{"text": "mine"}')
    assert path.read_text().splitlines()[-1] == '{"text": "mine"}'


# --- the readers --------------------------------------------------------------------------------


@pytest.fixture
def who(tmp_path: Path) -> AgentIdentity:
    return AgentIdentity(tmp_path, "p", "t", 1)


@pytest.mark.parametrize(("make", "said"), [(_fifo, "a FIFO"), (_zero, "a symbolic link")])
def test_a_signal_file_that_is_not_one_ends_the_attempt_with_a_reason_naming_it(who, make, said):
    sig = agent_signals.read(make(Paths(who.root).signal_file("p", "t", 1)))
    assert sig is not None and sig.kind == Kind.BAD_FILE
    assert sig.reason == f"its signal file is {said}, not a file"


def test_a_ray_nodes_bad_file_signal_reads_back_as_one(tmp_path: Path):
    path = tmp_path / "signal.json"
    path.write_text(agent_signals.bad_file("its private git directory holds refs/x, which is a FIFO, not a file"))
    sig = agent_signals.read(path)
    assert sig is not None and sig.kind == Kind.BAD_FILE and "refs/x" in sig.reason


def test_questions_that_are_traps_are_left_out_and_the_real_one_waits(who):
    paths = Paths(who.root)
    asked = questions.ask(paths, "p", "t", 1, "Postgres or SQLite?", ("Postgres", "SQLite"), "")
    folder = paths.questions_dir("p", "t")
    _fifo(folder / "2.json")
    _zero(folder / "3.json")
    _zero(folder / f"{asked.number}.answer.json")
    (folder / "4.json").write_text(json.dumps({"text": "t", "options": 7, "details": {"a": 1}}))
    loaded = questions.load(paths, "p", "t")
    assert [q.number for q in loaded] == [1, 4]
    assert loaded[0].answer is None and loaded[1].options == ()


def test_discovered_items_that_are_traps_are_dropped_and_the_good_one_filed(who):
    paths = Paths(who.root)
    found = paths.found_dir("p", "t", 1)
    _fifo(found / "D1.json")
    _zero(found / "D2.json")
    (found / "D3.json").write_text(json.dumps({"title": "A real item", "details": "d"}))
    (found / "D4.json").write_text(json.dumps(["not", "an", "item"]))
    _fifo(paths.discovered_dir("p") / "D9.json")  # and one beside the filed ones (an unsandboxed agent)
    assert discovered.take_found(who) == 1
    assert [(d.id, d.title) for d in discovered.pending(paths)] == [("D1", "A real item")]


def test_notes_after_megabytes_of_junk_read_their_newest_with_sane_types(who):
    paths = Paths(who.root)
    path = paths.notes_file("p", "t")
    path.parent.mkdir(parents=True)
    path.write_text("x" * 3_000_000 + "\n" + json.dumps({"attempt": "one", "time": "now", "text": "odd"}) + "\n")
    agent_signals.add_note(who, "the newest")
    notes = agent_signals.notes(paths, "p", "t")
    assert [n["text"] for n in notes] == ["odd", "the newest"]
    assert notes[0]["attempt"] == 0 and notes[0]["time"] == 0.0


def test_a_notes_file_that_is_a_link_to_dev_zero_has_no_notes(who):
    paths = Paths(who.root)
    _zero(paths.notes_file("p", "t"))
    assert agent_signals.notes(paths, "p", "t") == []


def test_a_script_that_exited_0_is_found_finished_and_an_agent_that_did_is_not(tmp_path: Path):
    paths = Paths(tmp_path)
    exit_file = paths.exit_file("p", "t", 1)
    exit_file.parent.mkdir(parents=True)
    exit_file.write_text("0\n")
    assert agent_signals.script_finished(paths, "p", "t", 1) is None, "no script file: an agent's attempt"
    paths.script_file("p", "t", 1).parent.mkdir(parents=True)
    paths.script_file("p", "t", 1).write_text("true\n")
    found = agent_signals.script_finished(paths, "p", "t", 1)
    assert found is not None and found.kind == Kind.DONE and found.exited
    exit_file.write_text("1\n")
    assert agent_signals.script_finished(paths, "p", "t", 1) is None
