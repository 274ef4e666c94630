"""Issue 37: an agent that prints without end must not fill the disk. Through real `doit` and
tmux: a script task floods its log with 24 MB under `[logs] max_mb = 1`; it still merges, `.hive/`
stays a few MB, and `hive logs` shows the head, the marker saying what was dropped, and the end."""

from __future__ import annotations

import os
import re
from pathlib import Path

FLOOD_MB = 24  # well over what `.hive/` may hold below; tmux passes ~20 MB/s through

PLAN = f"""
### Task 1: Print far too much
**Type:** script

```bash
set -e
echo first-words
head -c {FLOOD_MB}000000 /dev/zero | tr '\\0' x | fold -w 199
echo last-words
echo made > made.txt
git add made.txt
git -c user.name=a -c user.email=a@a commit -qm made
```
"""

MARKER = re.compile(
    r"\[hive: (\d+\.\d) MB of output dropped here; the log keeps its first and last 1 MB \(\[logs\] max_mb\)\]"
)


def disk_use(folder: Path) -> int:
    """What `du` counts: the blocks of every file below `folder`."""
    return sum(
        os.lstat(os.path.join(where, name)).st_blocks * 512 for where, _, names in os.walk(folder) for name in names
    )


def test_a_flood_of_output_keeps_the_logs_head_and_tail_and_the_task_merges(repo):
    repo.configure(extra="[logs]\nmax_mb = 1\n")
    repo.write_plan("l", PLAN)
    r = repo.doit()
    assert r.returncode == 0, r.stderr
    assert repo.file_on_main("made.txt") == "made\n"
    used = disk_use(repo.root / ".hive")
    assert used < 8_000_000, f".hive/ holds {used:,} bytes after a {FLOOD_MB} MB flood"
    shown = repo.hive("logs", "l:1", "-n", "1000000").stdout
    dropped = MARKER.search(shown)
    assert dropped is not None, shown[:300] + " ... " + shown[-300:]
    assert FLOOD_MB - 4 < float(dropped.group(1)) < FLOOD_MB  # all but the head and the tail
    assert shown.index("first-words") < dropped.start() < shown.index("last-words")
    assert shown.rstrip().endswith("last-words")  # the end is there, to its last line
