#!/usr/bin/env bash
# A check (a task's Verify) as bench/merge_queue.py writes it into its plans:
#   **Verify:** bash .../bench/timed_check.sh LOG_DIR COMMAND [ARGS...]
# runs COMMAND and appends "START END EXIT_CODE" (epoch seconds, bash's $EPOCHREALTIME) to
# LOG_DIR/<plan>_<ID>, the task named by HIVE_TASK (every check gets it), and exits as COMMAND did.
# Hive records no check times of its own (no event marks a check's start or end), and these tell
# how long each check took and how many ran at once. LOG_DIR must be writable for a sandboxed
# check: the bench lists it in [sandbox] writable.
dir="${1:?usage: timed_check.sh LOG_DIR COMMAND [ARGS...]}"
shift
start=$EPOCHREALTIME
code=0
"$@" || code=$?
printf '%s %s %s\n' "$start" "$EPOCHREALTIME" "$code" >> "$dir/${HIVE_TASK//:/_}"
exit "$code"
