"""What a human does to a run: approve a plan, answer a question or a checkpoint, retry a task,
stop an agent. Each is one function that acts and returns what to tell the human; the `hive`
verbs (hive/cli) and the dashboard (hive/web) both call it, so an action has one code path and
is recorded the same way wherever it was asked for."""
