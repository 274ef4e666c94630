#!/usr/bin/env bash
# A stand-in agent for the benchmark (bench/run.py), used as
#   [agents.instant] command = ["bash", ".../bench/instant_agent.sh", "{context_file}"]
#
# Hive starts it in the task's worktree inside tmux, with HIVE_TASK set. It
#   1. prints one line (Hive's sign of life),
#   2. sleeps N seconds if the context file (the task brief) has a line `bench-sleep: N`
#      (the fixed-duration variant; without it the agent is "instant"),
#   3. writes bench-<plan>_<ID>.txt, commits it (`git add -A && git commit`),
#   4. runs `hive done`,
#   5. stays alive, like an interactive agent, until Hive kills its tmux session.
# Only bash builtins plus git and hive, so start-up costs a few milliseconds.
set -e
ctx="${1:?usage: instant_agent.sh CONTEXT_FILE}"
echo "bench agent: $HIVE_TASK attempt $HIVE_ATTEMPT"

secs=""
while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
        "bench-sleep: "*) secs="${line#bench-sleep: }"; break ;;
    esac
done < "$ctx"
if [ -n "$secs" ]; then
    sleep "$secs"
fi

name="bench-${HIVE_TASK//:/_}.txt"
echo "$HIVE_TASK" > "$name"
git add -A && git commit -q -m "bench: $HIVE_TASK"
hive done --reason "bench agent committed $name"

while :; do
    sleep 3600
done
