#!/usr/bin/env bash
# A stand-in agent for the benchmarks (bench/run.py, bench/merge_queue.py), used as
#   [agents.instant] command = ["bash", ".../bench/instant_agent.sh", "{context_file}"]
#
# Hive starts it in the task's worktree inside tmux, with HIVE_TASK set. It
#   1. prints one line (Hive's sign of life),
#   2. sleeps N seconds if the context file (the task brief) has a line `bench-sleep: N`
#      (the fixed-duration variant; without it the agent is "instant"),
#   3. with a line `bench-apply: COMMIT`: applies exactly that commit (`git cherry-pick
#      --no-commit`, committed with its message and author; a history replay), else writes
#      bench-<plan>_<ID>.txt and commits it (`git add -A && git commit`),
#   4. with a line `bench-fail-test: PATH`: also commits a pytest test at PATH that fails
#      (a task made to fail its check while the project's real suite runs),
#   5. runs `hive done`,
#   6. stays alive, like an interactive agent, until Hive kills its tmux session.
# Only bash builtins plus git and hive, so start-up costs a few milliseconds. The first line of
# each kind counts: the task's own description comes first in the brief.
set -e
ctx="${1:?usage: instant_agent.sh CONTEXT_FILE}"
echo "bench agent: $HIVE_TASK attempt $HIVE_ATTEMPT"

secs="" apply="" fail_test=""
while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
        "bench-sleep: "*) [ -n "$secs" ] || secs="${line#bench-sleep: }" ;;
        "bench-apply: "*) [ -n "$apply" ] || apply="${line#bench-apply: }" ;;
        "bench-fail-test: "*) [ -n "$fail_test" ] || fail_test="${line#bench-fail-test: }" ;;
    esac
done < "$ctx"
if [ -n "$secs" ]; then
    sleep "$secs"
fi

if [ -n "$apply" ]; then
    git cherry-pick --no-commit "$apply"
    git commit -q -C "$apply"
    done_what="applied $apply"
else
    name="bench-${HIVE_TASK//:/_}.txt"
    echo "$HIVE_TASK" > "$name"
    git add -A && git commit -q -m "bench: $HIVE_TASK"
    done_what="committed $name"
fi
if [ -n "$fail_test" ]; then
    printf 'def test_made_to_fail_by_the_benchmark():\n    assert False, "%s"\n' "$HIVE_TASK" > "$fail_test"
    git add -- "$fail_test" && git commit -q -m "bench: a test that fails ($HIVE_TASK)"
    done_what="$done_what and a failing test $fail_test"
fi
hive done --reason "bench agent $done_what"

while :; do
    sleep 3600
done
