"""Issue 44: text an agent wrote cannot drive the user's terminal. A note, a reason, a question and
its options, a file name: each printing path shows its control bytes escaped (`\\x1b`), its words
kept — `doit`, `doit list`, `doit info`, `hive status`, `hive logs`, `hive answer`."""

from __future__ import annotations

# OSC 0 sets the terminal's title, OSC 52 writes the clipboard, CSI 2J clears the screen
TITLE, CLIPBOARD, CLEAR = "\\x1b]0;pwned\\x07", "\\x1b]52;c;ZXZpbA==\\x07", "\\x1b[2J"

PLAN = f"""
### Task 1: Leaves marks
fake: note 'left a note {TITLE} here'
fake: print 'printed {CLEAR} this'
fake: write 'odd{CLEAR}name.txt' x
fake: commit odd file
fake: signal blocked 'cannot go on {CLIPBOARD} really'

### Task 2: Asks
fake: ask 'Which {TITLE} one?' 'A{CLEAR},B'
fake: signal done
"""


def _raw(text: str) -> bool:
    return any(byte in text for byte in ("\x1b", "\x07"))


def test_an_agents_escape_sequences_reach_no_terminal_raw(repo):
    repo.write_plan("t", PLAN)
    cfg = repo.root / ".hive" / "config.toml"
    cfg.write_text(cfg.read_text().replace("[execution]\n", '[execution]\nask_wait = "1s"\n', 1))
    run = repo.doit()
    shown = {"doit": run.stdout + run.stderr}
    assert "cannot go on \\x1b]52;c;ZXZpbA==\\x07 really" in shown["doit"], shown["doit"]
    listed = repo.doit("list")
    shown["doit list"] = listed.stdout + listed.stderr
    assert "cannot go on \\x1b]52;c;ZXZpbA==\\x07 really" in shown["doit list"]
    info = repo.doit("info", "t:1")
    shown["doit info"] = info.stdout + info.stderr
    status = repo.hive("status")
    shown["hive status"] = status.stdout + status.stderr
    assert "note: left a note \\x1b]0;pwned\\x07 here (attempt 1)" in shown["hive status"], shown["hive status"]
    # a question's escapes are taken out as it is read (store/questions.py): what is left is words
    assert "asks: Which  one?" in shown["hive status"], shown["hive status"]
    logs = repo.hive("logs", "t:1")
    shown["hive logs"] = logs.stdout + logs.stderr
    assert "printed" in shown["hive logs"] and "this" in shown["hive logs"]
    answered = repo.hive("answer", "t:2", "--choice", "A")
    shown["hive answer"] = answered.stdout + answered.stderr
    assert answered.returncode == 0, shown["hive answer"]
    for where, text in shown.items():
        assert not _raw(text), f"{where} printed a raw control byte: {text!r}"
