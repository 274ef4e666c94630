#!/usr/bin/env python3
"""A stand-in for an interactive planning agent: reads Hive's planning brief and
writes the plan it asks for. Words in the goal change what it does:
"broken" → a plan with a bad dependency; "approved" → it claims `status: approved`;
"crash" → it exits 2 without writing anything; "silent" → it exits 0 without writing;
"ask" → it waits for a line on its terminal (a human answering) before writing.

Given a split brief (`hive plan --split`), it writes the two tasks <ID>.1 and <ID>.2
that replace the task (the second depending on the first) to the file the brief names;
words in the too_big reason change that: "silent" → it writes nothing; "misnumbered"
→ it numbers them 7 and 8; "broken" → the first depends on an unknown task 99."""

import re
import sys
from pathlib import Path

brief = Path(sys.argv[1]).read_text()


def split(brief: str) -> None:
    task = re.search(r"^# Split task: \S+:(\S+)$", brief, re.MULTILINE).group(1)
    reason = re.search(r"^> (.*)$", brief, re.MULTILINE).group(1)
    target = re.search(r"Write \*\*only the replacement tasks\*\* to \*\*(.+?)\*\*", brief).group(1)
    if "silent" in reason:
        print("fake planner: nothing to split", flush=True)
        sys.exit(0)
    first, second = ("7", "8") if "misnumbered" in reason else (f"{task}.1", f"{task}.2")
    dep = "99" if "broken" in reason else "none"
    Path(target).write_text(f"""## The split

### Task {first}: First half
**Depends on:** {dep}

fake: write half1.txt one
fake: commit first half
fake: signal done

### Task {second}: Second half
**Depends on:** {first}

fake: write half2.txt two
fake: commit second half
fake: signal done
""")
    print(f"fake planner: wrote {target}", flush=True)
    sys.exit(0)


if brief.startswith("# Split task: "):
    split(brief)
goal = re.search(r"^# Planning session: (.*)$", brief, re.MULTILINE).group(1)
target = re.search(r"Write the plan to \*\*(.+?)\*\*", brief).group(1)
if "crash" in goal:
    print("fake planner: the model is unreachable", flush=True)
    sys.exit(2)
if "silent" in goal:
    print("fake planner: nothing to plan", flush=True)
    sys.exit(0)
if "ask" in goal:
    print("fake planner: shall I write it? ", end="", flush=True)
    answer = sys.stdin.readline()
    print(f"fake planner: you said {answer.strip()!r}")
status = "approved" if "approved" in goal else "draft"
dep = "99" if "broken" in goal else "1"
Path(target).write_text(f"""---
status: {status}
---
# {goal}

## Tasks

### Task 1: First step
**Acceptance:** it exists

### Task 2: Second step
**Depends on:** {dep}
""")
print(f"fake planner: wrote {target}")
