#!/usr/bin/env python3
"""A stand-in for an interactive planning agent: reads Hive's planning brief and
writes the plan it asks for. Words in the goal change what it does:
"broken" → a plan with a bad dependency; "approved" → it claims `status: approved`;
"crash" → it exits 2 without writing anything; "silent" → it exits 0 without writing;
"ask" → it waits for a line on its terminal (a human answering) before writing."""

import re
import sys
from pathlib import Path

brief = Path(sys.argv[1]).read_text()
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
