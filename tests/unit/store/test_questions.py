"""hive/store/questions.py: an agent's questions and its human's answers, as files that
each side creates once (so nothing is lost to a kill -9 and nobody answers twice)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive.errors import HiveError
from hive.store import questions
from hive.store.paths import Paths


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths(tmp_path)


def ask(paths: Paths, text: str = "Which database?", attempt: int = 1, options: tuple[str, ...] = ()):
    return questions.ask(paths, "shop", "3", attempt, text, options, "")


def test_a_question_waits_until_it_is_answered_and_the_choice_is_one_of_its_options(paths: Paths):
    q = ask(paths, options=("Postgres", "SQLite"))
    assert q.number == 1 and questions.waiting(questions.load(paths, "shop", "3")) == q
    with pytest.raises(HiveError, match="'MySQL' is not one of the question's options: Postgres, SQLite"):
        questions.answer(paths, "shop", "3", "", "MySQL")
    answered = questions.answer(paths, "shop", "3", "it is small", "sqlite")
    assert (answered.choice, answered.answer) == ("SQLite", "it is small")
    assert answered.shown_answer() == "SQLite — it is small"
    [loaded] = questions.load(paths, "shop", "3")
    assert loaded.answered and loaded.choice == "SQLite" and not loaded.delivered
    assert questions.waiting([loaded]) is None
    with pytest.raises(HiveError, match="shop:3 has no question waiting for an answer"):
        questions.answer(paths, "shop", "3", "again")


def test_an_answer_needs_text_or_a_choice_and_a_choice_needs_options(paths: Paths):
    ask(paths)
    with pytest.raises(HiveError, match="give the answer's text, or --choice"):
        questions.answer(paths, "shop", "3", "")
    with pytest.raises(HiveError, match="has no options: answer it with text, not --choice"):
        questions.answer(paths, "shop", "3", "", "Postgres")
    assert questions.answer(paths, "shop", "3", "Postgres").shown_answer() == "Postgres"


def test_the_same_question_asked_again_before_its_answer_reached_the_agent_is_the_same_question(paths: Paths):
    first = ask(paths)
    assert ask(paths).number == first.number, "a tool call cut short and run again waits for the same answer"
    questions.answer(paths, "shop", "3", "SQLite")
    assert ask(paths).number == first.number, "an answer that came meanwhile is given at once"
    questions.mark_delivered(paths, "shop", "3", first.number)
    assert ask(paths).number == 2, "asked again after it had its answer: a new question"
    assert ask(paths, attempt=2).number == 3, "a new attempt asks anew"


def test_time_spent_waiting_counts_per_attempt_and_an_undelivered_answer_is_left_unanswered(paths: Paths):
    ask(paths, "A?")
    [q] = questions.load(paths, "shop", "3")
    assert questions.waited([q], 1, q.asked_at + 40) == pytest.approx(40)
    assert questions.waited([q], 2, q.asked_at + 40) == 0
    assert questions.left_unanswered([q], 1) == q
    questions.answer(paths, "shop", "3", "yes")
    [q] = questions.load(paths, "shop", "3")
    assert questions.waited([q], 1, q.answered_at + 100) == pytest.approx(q.answered_at - q.asked_at)
    assert questions.left_unanswered([q], 1) == q, "answered, but its agent never got it"
    questions.mark_delivered(paths, "shop", "3", q.number)
    assert questions.left_unanswered(questions.load(paths, "shop", "3"), 1) is None


def test_files_an_agent_mangled_are_left_out_and_the_questions_folder_is_listed_once(paths: Paths):
    ask(paths)
    folder = paths.questions_dir("shop", "3")
    (folder / "7.json").write_text("not json")
    (folder / "8.json").write_text('{"text": 5}')
    assert [q.number for q in questions.load(paths, "shop", "3")] == [1]
    found = questions.waiting_questions(paths, [("shop", "3"), ("shop", "4")])
    assert list(found) == [("shop", "3")] and found[("shop", "3")].text == "Which database?"
    assert questions.waiting_questions(Paths(paths.root / "elsewhere"), [("shop", "3")]) == {}


def test_the_answer_command_and_the_lines_a_human_reads(paths: Paths):
    q = ask(paths, options=("Post gres", "SQLite"))
    assert questions.answer_command("shop:3", q) == "hive answer shop:3 --choice 'Post gres'"
    assert questions.answer_command("shop:3", ask(paths, "Port?", attempt=2)) == 'hive answer shop:3 "your answer"'
    assert questions.asked_lines("Which?", "why", ("A", "B"), "hive answer x:1 --choice A") == [
        "its agent asks: Which?",
        "  details: why",
        "  options: A, B",
        "answer it: `hive answer x:1 --choice A`",
    ]


def test_what_an_agent_asks_cannot_rewrite_the_terminal_of_whoever_reads_it(paths: Paths):
    ask(paths, "Which\x1b[2J\x1b]0;pwned\x07 database?\r", options=("Post\x1b[31mgres", "SQLite"))
    [q] = questions.load(paths, "shop", "3")
    assert (q.text, q.options) == ("Which database?", ("Postgres", "SQLite"))


def test_only_the_last_question_can_wait_an_earlier_unanswered_one_was_given_up(paths: Paths):
    ask(paths, "Asked by an attempt that was interrupted?")
    ask(paths, "Asked by the next one?", attempt=2)
    assert questions.waiting(questions.load(paths, "shop", "3")).text == "Asked by the next one?"
    questions.answer(paths, "shop", "3", "yes")
    assert questions.waiting(questions.load(paths, "shop", "3")) is None, "nothing waits for the given-up one"


def test_an_attempt_that_had_the_answer_to_its_last_question_did_not_end_asking(paths: Paths):
    ask(paths, "Given up?")  # its tool call was cut short; it went on and asked another
    ask(paths, "Which port?")
    questions.answer(paths, "shop", "3", "8080")
    questions.mark_delivered(paths, "shop", "3", 2)
    assert questions.left_unanswered(questions.load(paths, "shop", "3"), 1) is None
