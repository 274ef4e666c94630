#!/usr/bin/env python3
"""A stand-in for an interactive planning agent: reads Hive's planning brief and
writes the plan it asks for. A goal containing "broken" gets a plan with a bad
dependency; one containing "approved" claims `status: approved`."""

import re
import sys
from pathlib import Path

brief = Path(sys.argv[1]).read_text()
goal = re.search(r"^# Planning session: (.*)$", brief, re.MULTILINE).group(1)
target = re.search(r"Write the plan to \*\*(.+?)\*\*", brief).group(1)
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
