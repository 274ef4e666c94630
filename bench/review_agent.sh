#!/usr/bin/env bash
# A stand-in reviewer for bench/merge_queue.py's measurement 4 (issue 39), used as
#   [agents.reviewer] command = ["bash", ".../bench/review_agent.sh", "SECONDS", "{context_file}"]
# It prints one line (Hive's sign of life), reads its brief, takes SECONDS as a reviewer would,
# approves with `hive done`, and stays alive until Hive ends its session.
set -e
secs="${1:?usage: review_agent.sh SECONDS CONTEXT_FILE}"
ctx="${2:?usage: review_agent.sh SECONDS CONTEXT_FILE}"
echo "bench reviewer: $HIVE_TASK ($HIVE_REVIEW)"
wc -c < "$ctx" > /dev/null
sleep "$secs"
hive done --reason "bench reviewer: read it"
while :; do
    sleep 3600
done
