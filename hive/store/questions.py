"""An agent's questions to its human (`hive ask`) and their answers (`hive answer`):
one folder per task under `.hive/questions/` (Paths.questions_dir), holding for question N

- `N.json`          the question, written once by the asking agent
- `N.answer.json`   the human's answer, written once by `hive answer`
- `N.delivered`     the asking `hive ask` printed the answer to its agent
- `N.gave-up`       the asking `hive ask` stopped waiting and told its agent to end its session

Each file is created whole and exclusively (the first writer wins), so a `kill -9` of
anything leaves every question and answer readable, and two humans answering at once
cannot both win. The task's state is not touched by either side: the orchestrator
reads these files (a waiting agent's clocks stop, the question shows in `hive status`),
and so does the next attempt's brief.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hive.errors import HiveError
from hive.output import plain
from hive.store.files import SMALL, NotAFile, create_exclusive, list_untrusted, read_untrusted
from hive.store.paths import Paths

MOST = 100  # questions of a task read (its newest): a run reads them every second


@dataclass(frozen=True)
class Question:
    number: int
    attempt: int  # the attempt that asked it
    text: str
    options: tuple[str, ...] = ()
    details: str = ""
    asked_at: float = 0.0
    answer: str | None = None  # None: not answered yet
    choice: str = ""  # the option the human chose (`hive answer --choice`)
    answered_at: float = 0.0
    delivered: bool = False  # its `hive ask` got the answer and printed it
    gave_up_at: float = 0.0  # when its `hive ask` stopped waiting (0: it did not)

    @property
    def answered(self) -> bool:
        return self.answer is not None

    def waited(self, now: float) -> float:
        """How long its agent has waited (or waited) for the answer."""
        return max(0.0, (self.answered_at if self.answered else now) - self.asked_at)

    def shown_answer(self) -> str:
        """The answer as its agent reads it: the choice, then what the human added."""
        answer = self.answer or ""
        if self.choice and answer:
            return f"{self.choice} — {answer}"
        return self.choice or answer


def load(paths: Paths, plan: str, task_id: str) -> list[Question]:
    """Every question of the task (its newest MOST), oldest first. The folder is its agents'
    to write: a file that is not a question's (a FIFO, a link to /dev/zero, a huge file, not
    JSON) is left out, and that must not stop the run (it hung it: issue 37)."""
    folder = paths.questions_dir(plan, task_id)
    try:
        names = set(list_untrusted(folder))
    except (FileNotFoundError, NotAFile):
        return []
    numbers = sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())[-MOST:]
    out = []
    for n in numbers:
        asked = _read(folder / f"{n}.json")
        if not isinstance(asked.get("text"), str):
            continue
        answer = _read(folder / f"{n}.answer.json") if f"{n}.answer.json" in names else {}
        out.append(
            Question(
                number=n,
                attempt=_int(asked.get("attempt")),
                # an agent wrote these: they reach terminals, notifications and the next brief
                text=plain(asked["text"]),
                options=tuple(plain(o) for o in _list(asked.get("options")) if isinstance(o, str)),
                details=plain(str(asked.get("details", ""))),
                asked_at=_float(asked.get("time")),
                answer=str(answer.get("answer", "")) if answer else None,
                choice=str(answer.get("choice", "")) if answer else "",
                answered_at=_float(answer.get("time")) if answer else 0.0,
                delivered=f"{n}.delivered" in names,
                gave_up_at=_mtime(folder / f"{n}.gave-up") if f"{n}.gave-up" in names else 0.0,
            )
        )
    return out


def waiting(questions: Sequence[Question]) -> Question | None:
    """The question that waits for its answer: the task's last one, unanswered. An agent
    asks one at a time, so an earlier one left unanswered was given up (its attempt was
    interrupted, or its agent went on without it) and waits for nobody."""
    return questions[-1] if questions and not questions[-1].answered else None


def waited(questions: Iterable[Question], attempt: int, now: float) -> float:
    """How long the attempt's agent has spent waiting for answers: time its task's
    timeout does not count."""
    return sum(q.waited(now) for q in questions if q.attempt == attempt)


def left_unanswered(questions: Iterable[Question], attempt: int) -> Question | None:
    """The attempt's last question, if its answer never reached it (its `hive ask` gave up
    waiting): an agent that ends then was told to, and is not a crash. (One it asked before
    and then got an answer to a later one was given up: its end says nothing of it.)"""
    asked = [q for q in questions if q.attempt == attempt]
    return asked[-1] if asked and not asked[-1].delivered else None


def ask(
    paths: Paths, plan: str, task_id: str, attempt: int, text: str, options: tuple[str, ...], details: str
) -> Question:
    """File the question, or find it again: the same question asked again by the same
    attempt before its answer reached it (a tool call its CLI cut short, run again)
    waits for the one already asked, or gets its answer at once."""
    questions = load(paths, plan, task_id)
    last = questions[-1] if questions else None
    if last is not None and last.attempt == attempt and last.text == plain(text) and not last.delivered:
        return last
    number, now = (last.number if last else 0) + 1, time.time()
    record = {"attempt": attempt, "text": text, "options": list(options), "details": details, "time": now}
    folder = paths.questions_dir(plan, task_id)
    while not create_exclusive(folder / f"{number}.json", json.dumps(record)):
        number += 1  # another writer took that number (only a hostile agent would)
    return Question(number, attempt, text, options, details, now)


def answer(paths: Paths, plan: str, task_id: str, text: str, choice: str = "") -> Question:
    """Answer the task's waiting question. A choice must be one of its options."""
    question = waiting(load(paths, plan, task_id))
    if question is None:
        raise HiveError(
            f"{plan}:{task_id} has no question waiting for an answer (`hive status` shows the questions agents asked)"
        )
    if choice:
        choice = _option(question, choice)
    elif not text:
        raise HiveError("give the answer's text, or --choice with one of the question's options")
    now = time.time()
    record = {"answer": text, "choice": choice, "time": now}
    if not create_exclusive(paths.questions_dir(plan, task_id) / f"{question.number}.answer.json", json.dumps(record)):
        raise HiveError(f"{plan}:{task_id}: question {question.number} was answered meanwhile (`hive status` shows it)")
    return dataclasses.replace(question, answer=text, choice=choice, answered_at=now)


def mark_delivered(paths: Paths, plan: str, task_id: str, number: int) -> None:
    create_exclusive(paths.questions_dir(plan, task_id) / f"{number}.delivered", "")


def mark_gave_up(paths: Paths, plan: str, task_id: str, number: int) -> None:
    create_exclusive(paths.questions_dir(plan, task_id) / f"{number}.gave-up", "")


def told_to_end(questions: Sequence[Question], attempt: int) -> Question | None:
    """The attempt's question whose `hive ask` gave up and told its agent to end its session,
    while the answer has not reached it: an agent still running then is stopped by Hive
    after a while (a TUI cannot quit itself, and an idle one would hold its worker)."""
    last = questions[-1] if questions else None
    return last if last and last.attempt == attempt and last.gave_up_at and not last.delivered else None


def waiting_questions(paths: Paths, tasks: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Question]:
    """Each (plan, task id)'s waiting question, the questions folder listed once."""
    try:
        present = {entry.name for entry in os.scandir(paths.questions)}
    except FileNotFoundError:
        return {}
    out = {}
    for plan, task_id in tasks:
        if paths.questions_dir(plan, task_id).name in present:
            q = waiting(load(paths, plan, task_id))
            if q is not None:
                out[(plan, task_id)] = q
    return out


def answer_command(key: str, question: Question) -> str:
    """The exact command that answers it (with its first option, when it has options)."""
    if question.options:
        return f"hive answer {key} --choice {shlex.quote(question.options[0])}"
    return f'hive answer {key} "your answer"'


def asked_lines(text: str, details: str, options: tuple[str, ...], command: str) -> list[str]:
    """A question as a human reads it (its text, then what goes with it), with the
    command that answers it."""
    lines = [f"its agent asks: {text}"]
    if details:
        lines.append(f"  details: {details}")
    if options:
        lines.append(f"  options: {', '.join(options)}")
    return [*lines, f"answer it: `{command}`"]


def _option(question: Question, choice: str) -> str:
    if not question.options:
        raise HiveError(f"question {question.number} has no options: answer it with text, not --choice")
    for option in question.options:
        if option.casefold() == choice.strip().casefold():
            return option
    raise HiveError(f"{choice!r} is not one of the question's options: {', '.join(question.options)}")


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_untrusted(path, SMALL))
    except (OSError, ValueError, NotAFile):
        return {}
    return data if isinstance(data, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _mtime(path: Path) -> float:
    try:
        return path.lstat().st_mtime
    except OSError:
        return 0.0


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0
