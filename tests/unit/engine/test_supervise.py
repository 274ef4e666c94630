"""hive/engine/supervise.py: watching an agent until it signals, exits, stalls or times out.

Real files (signal, stop, exit, log) in tmp_path, a fake executor and a fake clock:
the spawn grace, stall and timeout rules run in milliseconds, not in minutes.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

from hive.engine.supervise import ASK_END_GRACE, POLL, STALL_QUIET, Hooks, Watch, exit_status, output_tail, wait
from hive.executors import Agent, AgentRef
from hive.lifecycle import SIGNALS, Kind, Outcome
from hive.output import clean_tail
from hive.store import agent_signals, questions
from hive.store.agent_signals import AgentIdentity
from hive.store.paths import Paths

T0 = 1_000_000.0
LIMIT = 3600.0
HEADER = "\n===== hive: auth:1 attempt 1 (w1) =====\n"  # what the runner writes before an attempt


class FakeClock:
    """time() is a counter; sleep() advances it and runs the actions that fell due."""

    def __init__(self) -> None:
        self.now = T0
        self._due: list[tuple[float, Callable[[], object]]] = []

    def after(self, seconds: float, action: Callable[[], object]) -> None:
        self._due.append((T0 + seconds, action))

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.now += seconds
        assert self.elapsed < LIMIT, f"still waiting after {LIMIT:g}s of fake time"  # a hang fails instead
        for item in [d for d in self._due if d[0] <= self.now]:
            self._due.remove(item)
            item[1]()

    @property
    def elapsed(self) -> float:
        return self.now - T0


class FakeAgent:
    """The Agent methods `wait` uses."""

    def __init__(self, ref: AgentRef) -> None:
        self.ref = ref
        self.dead = False
        self.lost = ""  # why its host went away, once it did
        self.zombie = False  # looks alive to the cheap check, dead to the thorough one
        self.shown = ""
        self.thorough_checks = 0
        self.meanwhile: Callable[[], None] | None = None  # runs once, as alive() is asked

    def alive(self, thorough: bool = False) -> bool:
        action, self.meanwhile = self.meanwhile, None
        if action:
            action()
        if thorough:
            self.thorough_checks += 1
            return not (self.dead or self.zombie)
        return not self.dead

    def screen(self, lines: int) -> str:
        return self.shown

    def gone(self) -> str:
        return self.lost


class Scene:
    """One attempt: its files, its executor and the clock, and what the agent does when."""

    def __init__(self, tmp_path: Path) -> None:
        self.root = tmp_path
        self.paths = Paths(tmp_path)
        self.clock = FakeClock()
        self.agent = FakeAgent(AgentRef(str(self.root), "auth:1", 1, "hive-w1-auth-1-abcdef-a1", token=4242))
        self.log = self.paths.log_file("auth", "1")
        self.log.parent.mkdir(parents=True)
        self.log.write_text("output of an earlier attempt\n" + HEADER)
        self.offset = self.log.stat().st_size  # where this attempt's output starts
        self.who = AgentIdentity(tmp_path, "auth", "1", 1)

    def watch(self, **changes) -> Watch:
        w = Watch(
            agent=cast(Agent, self.agent),
            signal_path=self.paths.signal_file("auth", "1", 1),
            exit_file=self.paths.exit_file("auth", "1", 1),
            stop_file=self.paths.stop_file("auth", "1", 1),
            log_path=self.log,
            log_offset=self.offset,
            started_at=T0,
            timeout=120,
            stuck_threshold=300,
            grace=10,
        )
        return dataclasses.replace(w, **changes)

    def say(self, text: str) -> None:
        with open(self.log, "a") as f:
            f.write(text + "\n")

    def exit(self, status: int | None) -> None:
        if status is not None:
            path = self.paths.exit_file("auth", "1", 1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{status}\n")
        self.agent.dead = True

    def signal(self, kind: Kind, reason: str = "", attempt: int = 1) -> None:
        assert agent_signals.send(dataclasses.replace(self.who, attempt=attempt), kind, reason)

    def stop(self) -> None:
        path = self.paths.stop_file("auth", "1", 1)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")

    def wait(
        self, w: Watch, on_stuck: Callable[[float], None] = lambda idle: None, hooks: Hooks | None = None
    ) -> Outcome:
        return wait(w, hooks or Hooks(stuck=on_stuck), self.clock)


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    return Scene(tmp_path)


# --- signals and stops --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SIGNALS.values()))
def test_a_signal_ends_the_wait_with_its_kind_and_reason(scene: Scene, kind: Kind):
    scene.signal(kind, "the reason")
    assert scene.wait(scene.watch()) == Outcome(kind, "the reason")
    assert scene.clock.elapsed == 0


def test_a_signal_is_seen_within_a_poll(scene: Scene):
    scene.say("working")
    scene.clock.after(5, lambda: scene.signal(Kind.BLOCKED, "needs a key"))
    assert scene.wait(scene.watch()) == Outcome(Kind.BLOCKED, "needs a key")
    assert 5 <= scene.clock.elapsed < 5 + 2 * POLL


def test_a_signal_of_another_attempt_is_ignored(scene: Scene):
    scene.say("working")
    scene.signal(Kind.DONE, attempt=2)
    scene.clock.after(20, lambda: scene.exit(1))
    assert scene.wait(scene.watch()).kind == Kind.CRASHED


def signal_and_exit(scene: Scene) -> None:
    scene.signal(Kind.DONE)
    scene.exit(0)


def test_a_signal_sent_just_before_exiting_counts(scene: Scene):
    scene.say("working")
    scene.clock.after(20, lambda: signal_and_exit(scene))
    assert scene.wait(scene.watch()) == Outcome(Kind.DONE, "")


def test_a_signal_sent_between_the_signal_check_and_the_exit_check_counts(scene: Scene):
    scene.say("working")
    scene.clock.after(20, lambda: setattr(scene.agent, "meanwhile", lambda: signal_and_exit(scene)))
    assert scene.wait(scene.watch()) == Outcome(Kind.DONE, "")


def test_the_stop_file_stops_it_with_its_last_words(scene: Scene):
    scene.agent.shown = "\x1b[1mediting auth.py\x1b[0m\n\n"
    scene.clock.after(3, scene.stop)
    outcome = scene.wait(scene.watch())
    assert outcome == Outcome(Kind.STOPPED, "stopped by `hive stop`", "editing auth.py")


def test_a_signal_wins_over_a_stop(scene: Scene):
    scene.stop()
    scene.signal(Kind.DONE)
    assert scene.wait(scene.watch()).kind == Kind.DONE


# --- exits --------------------------------------------------------------------------------------


def test_exit_zero_is_done_for_agents_that_say_so(scene: Scene):
    scene.say("all good")
    scene.clock.after(20, lambda: scene.exit(0))
    assert scene.wait(scene.watch(exit_zero_is_done=True)) == Outcome(Kind.DONE, "agent exited with status 0")


def test_exit_zero_without_a_signal_is_a_crash_for_other_agents(scene: Scene):
    scene.say("all good")
    scene.clock.after(20, lambda: scene.exit(0))
    outcome = scene.wait(scene.watch())
    assert outcome.kind == Kind.CRASHED and "(status 0)" in outcome.reason


def test_a_script_that_exits_zero_is_done(scene: Scene):
    scene.clock.after(1, lambda: scene.exit(0))
    assert scene.wait(scene.watch(grace=None)) == Outcome(Kind.DONE, "script finished")


def test_a_script_that_fails_reports_its_status_and_its_own_output(scene: Scene):
    scene.say("\x1b[31mE   assert 1 == 2\x1b[0m")
    scene.clock.after(1, lambda: scene.exit(3))
    outcome = scene.wait(scene.watch(grace=None))
    assert outcome.kind == Kind.SCRIPT_FAILED
    assert outcome.reason == "script exited with status 3"
    assert outcome.output_tail == "E   assert 1 == 2"  # from the log: the screen is gone


def test_a_script_is_never_failed_for_silence(scene: Scene):
    scene.clock.after(60, lambda: scene.exit(0))
    assert scene.wait(scene.watch(grace=None)).kind == Kind.DONE


@pytest.mark.parametrize(
    ("output_at", "exit_at", "kind", "words"),
    [
        (2, 15, Kind.CRASHED, "crashed: the agent exited (status 1) without signalling"),
        (
            1,
            3,
            Kind.SPAWN_FAILED,
            "agent_spawn_failed: the agent exited (status 1) within 10s without signalling: thinking",
        ),
        (None, 3, Kind.SPAWN_FAILED, "agent_spawn_failed: the agent exited (status 1) within 10s without signalling"),
    ],
)
def test_an_agent_that_exits_without_a_signal(
    scene: Scene, output_at: float | None, exit_at: float, kind: Kind, words: str
):
    if output_at is not None:
        scene.clock.after(output_at, lambda: scene.say("thinking"))
    scene.clock.after(exit_at, lambda: scene.exit(1))
    outcome = scene.wait(scene.watch())
    assert (outcome.kind, outcome.reason) == (kind, words)
    assert exit_at <= scene.clock.elapsed < exit_at + 2 * POLL


def test_an_agent_found_dead_without_ever_writing_output_never_started(scene: Scene):
    scene.exit(1)  # a re-attached run, long after the grace period, finds it like this
    outcome = scene.wait(scene.watch(started_at=T0 - 50))
    assert outcome.kind == Kind.SPAWN_FAILED and "(status 1)" in outcome.reason


def test_an_exit_without_a_status_file_is_reported_as_unknown_after_a_second(scene: Scene):
    scene.say("thinking")
    scene.clock.after(20, lambda: scene.exit(None))
    outcome = scene.wait(scene.watch())
    assert outcome.kind == Kind.CRASHED and "(status None)" in outcome.reason
    assert 21 <= scene.clock.elapsed < 21.1  # exit_status waited its patience on the fake clock


def test_an_agent_whose_host_went_away_is_lost_at_once_not_a_crash(scene: Scene):
    def node_dies() -> None:
        scene.agent.dead, scene.agent.lost = True, "its Ray node went away"

    scene.say("thinking")
    scene.clock.after(20, node_dies)
    outcome = scene.wait(scene.watch())
    assert (outcome.kind, outcome.reason) == (Kind.LOST, "its Ray node went away")
    assert outcome.rule.state == "failed" and not outcome.rule.counts  # retried, and it does not count
    assert outcome.recorded_reason("auth:1") == "interrupted: its Ray node went away"
    assert 20 <= scene.clock.elapsed < 20 + 2 * POLL  # no wait for an exit status nobody will write


def test_a_signal_shipped_before_the_host_went_away_still_counts(scene: Scene):
    def done_then_node_dies() -> None:
        scene.signal(Kind.DONE, "")
        scene.agent.dead, scene.agent.lost = True, "its Ray node went away"

    scene.say("thinking")
    scene.agent.meanwhile = done_then_node_dies
    assert scene.wait(scene.watch()).kind == Kind.DONE


def test_a_dead_pane_only_the_thorough_check_sees_ends_the_wait_within_a_second(scene: Scene):
    scene.say("thinking")
    scene.clock.after(20, lambda: setattr(scene.agent, "zombie", True))
    outcome = scene.wait(scene.watch())
    assert outcome.kind == Kind.CRASHED
    assert scene.agent.thorough_checks >= 20
    assert scene.clock.elapsed <= 20 + 1 + 1 + 0.1  # one thorough check, then exit_status's patience


# --- spawn grace, stalls, timeout ---------------------------------------------------------------


def test_no_output_within_the_grace_period_is_a_spawn_failure(scene: Scene):
    outcome = scene.wait(scene.watch())
    assert outcome.kind == Kind.SPAWN_FAILED
    assert outcome.reason == "agent_spawn_failed: no output and no signal within 10s"
    assert 10 <= scene.clock.elapsed < 10 + 2 * POLL


def test_only_output_past_the_log_offset_is_a_sign_of_life(tmp_path: Path):
    this_attempt, whole_log = Scene(tmp_path / "a"), Scene(tmp_path / "b")
    assert this_attempt.wait(this_attempt.watch(timeout=30)).kind == Kind.SPAWN_FAILED
    assert whole_log.wait(whole_log.watch(timeout=30, log_offset=0)).kind == Kind.TIMEOUT


def test_output_during_the_grace_period_is_enough(scene: Scene):
    scene.clock.after(9, lambda: scene.say("started"))
    outcome = scene.wait(scene.watch(timeout=30))
    assert outcome == Outcome(Kind.TIMEOUT, "timeout: no signal after 30s", "started")


def test_timeout(scene: Scene):
    scene.say("working")
    outcome = scene.wait(scene.watch(timeout=60))
    assert (outcome.kind, outcome.reason) == (Kind.TIMEOUT, "timeout: no signal after 1m")
    assert 60 < scene.clock.elapsed < 60 + 2 * POLL


def test_a_reattached_watch_keeps_the_original_deadlines(scene: Scene):
    scene.say("working")
    outcome = scene.wait(scene.watch(started_at=T0 - 50, timeout=60))
    assert outcome.kind == Kind.TIMEOUT
    assert 10 < scene.clock.elapsed < 10 + 2 * POLL


def test_a_stall_pattern_on_screen_during_the_grace_period_fails_the_spawn(scene: Scene):
    scene.agent.shown = "Do you trust the files in this folder?\n> 1. Yes, proceed\n"
    scene.clock.after(2, lambda: scene.say("trust dialog drawn"))
    outcome = scene.wait(scene.watch(stall_patterns=("Do you trust",)))
    assert outcome.kind == Kind.SPAWN_FAILED
    assert outcome.reason == (
        "agent_spawn_failed: the agent is waiting at a prompt ('Do you trust') instead of working"
    )
    assert "Yes, proceed" in outcome.output_tail
    assert STALL_QUIET <= scene.clock.elapsed < STALL_QUIET + 2 * POLL  # once it has been silent that long


def test_a_prompts_words_on_the_screen_of_an_agent_at_work_are_not_a_stall(scene: Scene):
    """An interactive TUI's tool call can show a prompt's words ("Please log in" in the login
    page it writes): while its output flows it is working, not waiting."""
    scene.agent.shown = "Write(login.html)\n<h1>Please log in</h1>\n"
    for t in range(12):
        scene.clock.after(t * 0.5, lambda: scene.say("· Harmonizing…"))  # the spinner redraws until it is done
    scene.clock.after(5.8, lambda: scene.signal(Kind.DONE))
    assert scene.wait(scene.watch(stall_patterns=("Please log ?in",))).kind == Kind.DONE


def test_a_stall_pattern_after_the_grace_period_is_ignored(scene: Scene):
    scene.say("working")
    scene.clock.after(11, lambda: setattr(scene.agent, "shown", "Do you trust this?"))
    outcome = scene.wait(scene.watch(timeout=30, stall_patterns=("Do you trust",)))
    assert outcome.kind == Kind.TIMEOUT


def test_on_stuck_is_called_once_per_silence(scene: Scene):
    calls: list[tuple[float, float]] = []  # (when, idle)
    scene.say("working")
    scene.clock.after(25, lambda: scene.say("more work"))
    outcome = scene.wait(
        scene.watch(timeout=50, stuck_threshold=10), on_stuck=lambda idle: calls.append((scene.clock.elapsed, idle))
    )
    assert outcome.kind == Kind.TIMEOUT
    assert [round(when) for when, _ in calls] == [10, 35]  # silence 0→25 warns once, 25→50 once
    assert all(10 < idle < 10 + 2 * POLL for _, idle in calls)


def test_on_stuck_is_not_called_while_output_flows(scene: Scene):
    calls: list[float] = []
    for second in range(0, 30, 5):
        scene.clock.after(second + 1, lambda: scene.say("tick"))
    scene.clock.after(31, lambda: scene.signal(Kind.DONE))
    assert scene.wait(scene.watch(stuck_threshold=10), on_stuck=calls.append).kind == Kind.DONE
    assert calls == []


# --- exit_status, clean_tail, output_tail -------------------------------------------------------


@pytest.mark.parametrize(("text", "status"), [("0\n", 0), ("3", 3), ("-1\n", -1), ("", None), ("killed", None)])
def test_exit_status_reads_the_wrappers_file(tmp_path: Path, text: str, status: int | None):
    path = tmp_path / "a.exit"
    path.write_text(text)
    clock = FakeClock()
    assert exit_status(path, clock) == status
    assert clock.elapsed == 0


def test_exit_status_waits_its_patience_for_a_late_file_on_the_given_clock(tmp_path: Path):
    path = tmp_path / "a.exit"
    clock = FakeClock()
    clock.after(0.5, lambda: path.write_text("7\n"))
    assert exit_status(path, clock, patience=1.0) == 7
    assert 0.5 <= clock.elapsed < 0.5 + 2 * POLL
    missing, clock = tmp_path / "none.exit", FakeClock()
    assert exit_status(missing, clock, patience=2.0) is None
    assert 2.0 < clock.elapsed < 2.0 + 2 * POLL


def test_clean_tail_drops_escapes_blank_lines_and_tmux_notices():
    text = "\x1b[32mone\x1b[0m\r\n\n  \ntwo   \n\x1b]0;title\x07three\nPane is dead (status 1, Mon)\n"
    assert clean_tail(text, 20) == "one\ntwo\nthree"
    assert clean_tail(text, 2) == "two\nthree"
    assert clean_tail("", 5) == ""


def test_output_tail_prefers_the_screen_and_falls_back_to_this_attempts_log(scene: Scene):
    scene.say("line 1")
    scene.say("line 2")
    w = scene.watch()
    scene.agent.shown = "on screen\n"
    assert output_tail(w) == "on screen"
    scene.agent.shown = "  \n"
    assert output_tail(w, lines=5) == "line 1\nline 2"  # nothing of the earlier attempt
    assert output_tail(w, lines=1) == "line 2"


def test_a_remote_agents_signal_is_acted_on_as_its_host_reports_it_not_a_poll_later(scene: Scene):
    naps: list[float] = []

    def nap(seconds: float) -> None:  # a remote executor's wait: it wakes when news comes
        naps.append(seconds)
        scene.clock.sleep(seconds)

    scene.agent.nap = nap  # type: ignore[attr-defined]
    scene.say("thinking")
    scene.clock.after(20, lambda: setattr(scene.agent, "meanwhile", lambda: scene.signal(Kind.DONE, "")))
    outcome = scene.wait(scene.watch(poll=1.0, naps=True))
    assert outcome.kind == Kind.DONE
    assert 20 <= scene.clock.elapsed < 21  # the signal its alive() brought over is read before the next nap
    assert naps and set(naps) == {1.0}  # it waited on the executor, not on its own clock


# --- questions (`hive ask`): the clocks stop while the agent waits for its human ----------------


def _ask(scene: Scene, number: int = 1, attempt: int = 1) -> None:
    """What `hive ask` files, stamped with the scene's clock."""
    folder = scene.paths.questions_dir("auth", "1")
    folder.mkdir(parents=True, exist_ok=True)
    record = {"attempt": attempt, "text": f"question {number}?", "options": [], "details": "", "time": scene.clock.now}
    (folder / f"{number}.json").write_text(json.dumps(record))


def _answer(scene: Scene, number: int = 1, delivered: bool = True) -> None:
    folder = scene.paths.questions_dir("auth", "1")
    (folder / f"{number}.answer.json").write_text(json.dumps({"answer": "yes", "choice": "", "time": scene.clock.now}))
    if delivered:
        (folder / f"{number}.delivered").write_text("")


def _asking(scene: Scene, **changes) -> Watch:
    return scene.watch(attempt=1, questions=lambda: questions.load(scene.paths, "auth", "1"), **changes)


def test_time_spent_waiting_for_an_answer_does_not_count_against_the_timeout(scene: Scene):
    heard: list[tuple[float, int, bool]] = []
    scene.say("working")
    scene.clock.after(10, lambda: _ask(scene))
    scene.clock.after(200, lambda: _answer(scene))  # far beyond the 120 s timeout
    scene.clock.after(250, lambda: scene.signal(Kind.DONE))
    hooks = Hooks(question=lambda q: heard.append((scene.clock.elapsed, q.number, q.answered)))
    assert scene.wait(_asking(scene), hooks=hooks).kind == Kind.DONE
    assert [(n, answered) for _, n, answered in heard] == [(1, False), (1, True)]
    assert 10 <= heard[0][0] <= 11.1 and 200 <= heard[1][0] <= 201.1, "each is news within a second"


def test_the_timeout_counts_only_the_time_it_worked(scene: Scene):
    scene.say("working")
    scene.clock.after(10, lambda: _ask(scene))
    scene.clock.after(110, lambda: _answer(scene))  # waited 100 s
    outcome = scene.wait(_asking(scene))
    assert outcome.kind == Kind.TIMEOUT
    assert 220 <= scene.clock.elapsed <= 222, "120 s of work plus the 100 s it waited"


def test_silence_while_it_waits_for_its_human_is_no_stall(scene: Scene):
    stuck: list[float] = []
    scene.say("working")
    scene.clock.after(5, lambda: _ask(scene))
    scene.clock.after(100, lambda: _answer(scene))
    scene.clock.after(105, lambda: scene.signal(Kind.DONE))
    assert scene.wait(_asking(scene, stuck_threshold=30), on_stuck=stuck.append).kind == Kind.DONE
    assert stuck == []


def test_an_agent_that_ends_as_its_ask_told_it_is_asked_not_crashed(scene: Scene):
    scene.say("working")
    scene.clock.after(20, lambda: _ask(scene))
    scene.clock.after(40, lambda: scene.exit(0))
    outcome = scene.wait(_asking(scene))
    assert (outcome.kind, outcome.reason) == (Kind.ASKED, "question 1?")


def test_an_agent_that_had_its_answer_and_then_exited_crashed(scene: Scene):
    scene.say("working")
    scene.clock.after(20, lambda: _ask(scene))
    scene.clock.after(30, lambda: _answer(scene))
    scene.clock.after(40, lambda: scene.exit(1))
    assert scene.wait(_asking(scene)).kind == Kind.CRASHED


def test_a_question_of_an_earlier_attempt_stops_no_clock(scene: Scene):
    scene.say("working")
    _ask(scene, attempt=0)  # asked by the attempt before, never answered
    assert scene.wait(_asking(scene, timeout=30)).kind == Kind.TIMEOUT
    assert scene.clock.elapsed < 32


def _gave_up(scene: Scene, number: int = 1) -> None:
    """`hive ask` stopped waiting and told its agent to end its session."""
    marker = scene.paths.questions_dir("auth", "1") / f"{number}.gave-up"
    marker.write_text("")
    os.utime(marker, (scene.clock.now, scene.clock.now))


def test_an_agent_told_to_end_that_stays_is_ended_by_hive_after_a_while(scene: Scene):
    scene.say("working")
    scene.clock.after(10, lambda: _ask(scene))
    scene.clock.after(40, lambda: _gave_up(scene))  # a TUI sits at its prompt: it cannot quit itself
    outcome = scene.wait(_asking(scene))
    assert (outcome.kind, outcome.reason) == (Kind.ASKED, "question 1?")
    assert 40 + ASK_END_GRACE <= scene.clock.elapsed <= 40 + ASK_END_GRACE + 1.1


def test_the_answer_it_got_by_asking_again_keeps_it_going(scene: Scene):
    scene.say("working")
    scene.clock.after(10, lambda: _ask(scene))
    scene.clock.after(40, lambda: _gave_up(scene))
    scene.clock.after(50, lambda: _answer(scene))  # asked again, the same question: it got its answer
    scene.clock.after(40 + ASK_END_GRACE + 30, lambda: scene.signal(Kind.DONE))
    assert scene.wait(_asking(scene, timeout=600)).kind == Kind.DONE
