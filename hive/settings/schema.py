"""The schema of `.hive/config.toml`, the one source of its keys: section, type, default and
meaning of each. The loader checks values by it (`settings/config.py`), `hive init` writes its
commented config from it (`settings/template.py`), and the configuration reference
(docs/configuration.md, `python -m hive.reference`) is generated from it, so neither can
drift from what the code accepts (issue 21)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Key:
    section: str
    name: str
    field: str  # the attribute it sets (of Config; of AgentProfile for [agents.NAME])
    kind: str  # how its value is checked: a key of KINDS
    default: Any  # as written in TOML; None: not set (the feature is off)
    meaning: str
    example: Any = None  # a value to show where the default is "not set"

    @property
    def dotted(self) -> str:
        return f"{self.section}.{self.name}"


# kind -> what a value must be, as the user reads it (in errors and in the reference)
KINDS: dict[str, str] = {
    "str": "a string",
    "nonempty": "a non-empty string",
    "bool": "true or false",
    "posint": "a whole number >= 1",
    "nonnegint": "a whole number >= 0",
    "strlist": "a list of strings",
    "usd": "an amount in USD >= 0 (0 = no cap)",
    "duration": 'a duration: "250ms", "30s", "45m", "1.5h" or a number of seconds',
    "argv": "a list of strings: a program and its arguments, run without a shell",
    "url": "an http:// or https:// URL",
    "executor": "the name of an executor",
    "profile": "the name of an agent profile (built in, or an [agents.NAME] table)",
    "command": "a list of strings; {prompt} and {context_file} in it are replaced",
    "filename": "a plain file name (no /)",
    "mode": '"headless" or "interactive"',
    "regexlist": "a list of regular expressions",
    "env": "a table of strings",
    "stream": "the name of a stream reader",
    "seconds": "a number of seconds >= 0",
    "events": "a list of event names",
    "sandboxmode": '"auto", "on" or "off"',
    "network": '"allowlist", "open" or "none"',
    "hostlist": 'a list of hosts: "pypi.org", "127.0.0.1:8080" (that port only) or "*.npmjs.org"',
    "mergemode": '"local" or "pr"',
    "mergemethod": '"merge", "squash" or "rebase"',
    "repository": 'a forge repository, "owner/name"',
}
MERGE_MODES = ("local", "pr")
MERGE_METHODS = ("merge", "squash", "rebase")

# `[sandbox] network`: a way out only through an allowlist proxy, the machine's own, or none
# (hive.sandbox.network)
SANDBOX_NETWORKS = ("allowlist", "open", "none")

# What `[sandbox] hide` makes invisible to agents unless it says otherwise: credentials an
# agent has no business reading (it writes code; it does not push, deploy or sign), and the
# sockets of daemons that would do anything it asks with more rights than its own (a container
# runtime is root; the session's runtime folder holds the ssh and gpg agents and D-Bus). A unix
# socket on a read-only bind still takes connections: hiding it is what shuts it.
DEFAULT_HIDDEN = (
    "~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gh", "~/.netrc", "~/.git-credentials", "~/.docker",
    "~/.kube", "~/.config/gcloud", "/run/docker.sock", "/var/run/docker.sock",
    "/run/containerd/containerd.sock", "/run/podman/podman.sock", "/run/user",
)  # fmt: skip

# What `[merge] protect` keeps agents' branches from changing unless a human approves: what the
# user's next `doit` obeys — its dodo.py and doit.cfg (code and plugins doit loads), Hive's config
# and state (.hive/: sandbox, notify command), the plans (an approved plan runs) (issue 37)
DEFAULT_PROTECTED = ("dodo.py", "doit.cfg", ".hive/", "plans/")

# What `[notify]` can tell (hive.notify.events builds each), and what it tells unless `events` says
NOTIFY_EVENTS = (
    "checkpoint", "gate", "question", "failed", "blocked", "too_big", "paused", "budget", "pr_review",
    "task_done", "run_started", "run_finished",
)  # fmt: skip
DEFAULT_NOTIFY_EVENTS = tuple(e for e in NOTIFY_EVENTS if e not in ("task_done", "run_started"))

SECTIONS: dict[str, str] = {
    "agent": "Which agent profile runs a task.",
    "execution": "How long an attempt may take, and how often a task is tried.",
    "merge": "How a finished task reaches the main branch.",
    "worktrees": "Where each attempt's git worktree is made, and how it is prepared.",
    "parallel": "How many agents run at once.",
    "executor": "Where agents run: tmux sessions on this machine, or the nodes of a Ray cluster. Each "
    "executor has settings of its own (hive/executors).",
    "gates": "Hard stops that wait for a human (`<!-- checkpoint -->` markers in a plan always stop).",
    "budget": "Caps on what agents may spend.",
    "notify": "Tell a human when a run needs one. Off unless set.",
    "web": "`hive web`, the dashboard (docs/web.md).",
    "logs": "What Hive keeps of agents' output (`.hive/logs/`, what `hive logs` shows).",
    "sandbox": "What an agent can reach (bubblewrap): its own checkout and what its CLI must write; the "
    "main repository, your home and other tasks stay out of its reach. See docs/sandbox.md.",
    "forge": 'Where `[merge] mode = "pr"` opens a pull request per task: GitHub or GitHub Enterprise Server '
    "(docs/pull-requests.md). Hive pushes with your git credentials and talks to the forge with your token "
    "(GH_TOKEN, GITHUB_TOKEN or `gh auth token`); no agent ever gets either.",
}

KEYS: tuple[Key, ...] = (
    Key("agent", "default", "default_agent", "profile", "claude",
        "The agent profile a task runs with when neither the task (`**Agent:**`) nor its plan (`agent:`) names one."),
    Key("agent", "planner", "planner", "profile", "claude-interactive",
        "The profile `hive plan` talks to; it must be an interactive one."),
    Key("execution", "task_timeout", "task_timeout", "duration", "60m",
        "How long one attempt may run (a task's `**Timeout:**` overrides it); then it is stopped and failed."),
    Key("execution", "spawn_grace_period", "spawn_grace_period", "duration", "30s",
        "An agent must show output or signal within this, else the attempt fails as `agent_spawn_failed` "
        "with the agent's last output."),
    Key("execution", "stuck_threshold", "stuck_threshold", "duration", "15m",
        "An agent silent this long is flagged `STUCK?` in `hive status` (it is not stopped)."),
    Key("execution", "max_attempts", "max_attempts", "posint", 2,
        "How many attempts a task gets; a failed one is tried again with continuation context while attempts "
        "remain. Interruptions and rate-limit pauses do not count."),
    Key("execution", "keep_going", "keep_going", "bool", True,
        "A failed, blocked or waiting task stops only the tasks that depend on it; the others run "
        "(doit's `-c`). false: a run stops at the first task that does not finish."),
    Key("execution", "ask_wait", "ask_wait", "duration", "8m",
        "How long an agent's `hive ask` waits for the answer before it tells the agent to commit, note "
        "where it is and exit (it is started again with the answer). Keep it under the agent CLI's limit "
        "for one tool call (Claude Code's Bash tool: 10 min at most)."),
    Key("execution", "stop_patience", "stop_patience", "duration", "5s",
        "Stopping an agent sends SIGINT, then SIGTERM, then SIGKILL, this long apart."),
    Key("execution", "rate_limit_backoff", "rate_limit_backoff", "duration", "60s",
        "The first pause after a rate limit whose reset time the CLI did not say; it doubles each time, "
        "up to 1 h."),
    Key("merge", "main_branch", "main_branch", "str", "main",
        "The branch tasks start from and merge into; `hive init` records the branch checked out then."),
    Key("merge", "auto_merge", "auto_merge", "bool", True,
        "false: a verified task waits in `awaiting_human` until `hive approve <plan>:<ID>` merges it."),
    Key("merge", "require_tests", "require_tests", "bool", False,
        "Run `test_command` on the merged result of every task, besides its `**Verify:**`."),
    Key("merge", "test_command", "test_command", "str", "make test",
        "The project's tests, run with `bash -c` in the worktree when `require_tests = true`."),
    Key("merge", "max_checks", "max_checks", "nonnegint", 0,
        "At most this many tasks' checks (Verify, test_command) run at once, each in its task's own "
        "checkout; 0: as many as run (each worker may verify its own task). Lower it for a heavy test suite."),
    Key("merge", "batch", "merge_batch", "posint", 1,
        "Up to this many finished tasks verified together by one run of their checks, on the merge "
        "commit that holds them all: every member's Verify, and test_command once. Tasks that finish "
        "while the checks ahead run gather into the next batch; a batch that fails is bisected to "
        "find the task that fails alone (about log2(batch) more runs). 1: each task is verified on "
        "its own. For an expensive test suite, pair it with max_checks = 1."),
    Key("merge", "protect", "merge_protect", "strlist", list(DEFAULT_PROTECTED),
        "Paths a task's branch may not change on its own: Hive's controls, which your next `doit` obeys "
        "(a folder ends with `/`; `*` patterns as in `fnmatch`). A task whose change adds, edits, renames or "
        "deletes one is verified as usual, then waits in `awaiting_human` instead of merging: `hive approve` "
        "merges it as it is, `hive retry` runs it again told to leave them alone. The `[worktrees] base_path` "
        "folder is protected too. Add e.g. \".github/\" to keep agents off your CI."),
    Key("merge", "max_file_mb", "max_file_mb", "nonnegint", 50,
        "A task whose change adds a file bigger than this many MB waits in `awaiting_human` (its reason "
        "names the files) before the file reaches your repository; `hive approve` takes it as it is. 0: no limit."),
    Key("merge", "review", "review", "str", "",
        "The agent profile that reviews every task's change before it merges (a task's `**Review:**` or its "
        "plan's `review:` overrides it; `none`: no review): a fresh agent, in the sandbox, reads the merged "
        "result once its checks pass and says `hive done` (it merges) or `hive changes` (its author tries "
        "again, told why). \"\": no review."),
    Key("merge", "max_reviews", "max_reviews", "posint", 2,
        "Rounds of changes a review may send back to a task's author; at the next one the task waits for "
        "you with every review so far."),
    Key("merge", "mode", "merge_mode", "mergemode", "local",
        '"local": a verified task moves your main branch here. "pr": it is pushed to `[forge] remote` and '
        "opened as a pull request against `[forge] base`; it is done once the PR is merged on the forge — by "
        "Hive when its checks are green and it has `[forge] approvals`, or by a person."),
    Key("merge", "resolve_conflicts", "resolve_conflicts", "bool", True,
        "A merge conflict starts a resolve attempt by the agent (while attempts remain); false: the task "
        "is blocked for a human to resolve."),
    Key("forge", "kind", "forge_kind", "nonempty", "github",
        "The forge's kind: \"github\" (github.com, or GitHub Enterprise Server by `api_url`)."),
    Key("forge", "api_url", "forge_api_url", "url", "https://api.github.com",
        "Its REST API (GitHub Enterprise Server: \"https://HOST/api/v3\")."),
    Key("forge", "repository", "forge_repository", "repository", "",
        "The repository PRs are opened in, \"owner/name\"; \"\": read from `remote`'s URL."),
    Key("forge", "remote", "forge_remote", "nonempty", "origin",
        "The git remote task branches are pushed to (with your own git credentials)."),
    Key("forge", "base", "forge_base", "str", "",
        "The forge branch PRs target; \"\": `[merge] main_branch`."),
    Key("forge", "poll", "forge_poll", "duration", "30s",
        "How often an open PR is looked at while a run waits for it (conditional requests: one that finds "
        "nothing new costs nothing of the rate limit); slower when the hour's budget runs low."),
    Key("forge", "labels", "forge_labels", "strlist", [],
        "Labels every PR Hive opens gets."),
    Key("forge", "max_ci_rounds", "forge_max_ci_rounds", "posint", 3,
        "Rounds of failed CI sent back to a task's author (each a new attempt that does not count against "
        "max_attempts); at the next failure the task waits for you."),
    Key("forge", "approvals", "forge_approvals", "nonnegint", 1,
        "Approving reviews from collaborators with write access a PR needs on its current head before Hive "
        "merges it; 0: green checks are enough (a solo user who relies on reviewer agents)."),
    Key("forge", "merge_method", "forge_merge_method", "mergemethod", "merge",
        "How Hive merges a PR through the API: \"merge\", \"squash\" or \"rebase\"."),
    Key("forge", "delete_branch", "forge_delete_branch", "bool", True,
        "Delete the task's branch on the forge once its PR is merged."),
    Key("forge", "comment", "forge_comment", "bool", True,
        "Keep one status comment per task on its issue (a plan drafted from issues), edited as the task goes."),
    Key("worktrees", "base_path", "worktree_base", "str", "worktrees",
        "The folder (relative to the repository) that holds the attempts' worktrees."),
    Key("worktrees", "setup", "worktree_setup", "str", "",
        'A command run with `bash -c` in each new worktree before its agent starts, e.g. "npm ci" (in the '
        "sandbox, as checks are: what it downloads from needs `[sandbox] allow`)."),
    Key("worktrees", "teardown", "worktree_teardown", "str", "",
        "A command run with `bash -c` in a task's worktree just before Hive removes it, with the task's "
        'environment (`HIVE_PORT`, `HIVE_PORTS`, `COMPOSE_PROJECT_NAME`, ...), e.g. "docker compose down"; '
        "its failure is a warning, and the worktree is removed all the same."),
    Key("worktrees", "reuse", "worktree_reuse", "bool", True,
        "A worker keeps the checkout of a task it has finished and starts its next task in it: git "
        "rewrites only the files that differ, and ignored files (build outputs, caches such as "
        "`__pycache__`) stay, as on a CI runner that keeps its workspace. false: a fresh `git worktree "
        "add` for every attempt, so no task sees even the ignored files another left."),
    Key("worktrees", "copy", "worktree_copy", "strlist", [],
        'Files copied from the repository into each worktree and never committed, e.g. [".env"].'),
    Key("parallel", "max_workers", "max_workers", "posint", 4,
        "Caps `doit -n N`, across every `doit` running on this repository."),
    Key("executor", "kind", "executor", "executor", "tmux",
        "Where agents run: one of the executors below; the other keys of this section are the "
        "chosen executor's own settings."),
    Key("gates", "first_batch", "gate_first_batch", "bool", False,
        "Stop after the first batch of tasks (those with no dependencies) until `hive approve`."),
    Key("gates", "hub_threshold", "hub_threshold", "nonnegint", 0,
        "Stop after a task that at least this many tasks depend on (0 = off; 3 is a good value)."),
    Key("budget", "task_usd", "budget_task_usd", "usd", 0,
        "USD per task over its attempts: Claude gets `--max-budget-usd`, other agents are stopped at it."),
    Key("notify", "events", "notify_events", "events", list(DEFAULT_NOTIFY_EVENTS),
        "Which events the channels below are told of: " + ", ".join(NOTIFY_EVENTS) + " (`task_done` and "
        "`run_started` are off by default)."),
    Key("sandbox", "mode", "sandbox_mode", "sandboxmode", "auto",
        '"auto": every agent, script and check runs in a bubblewrap sandbox where bubblewrap works, '
        'else unsandboxed with one warning per run; "on": a run without bubblewrap does not start; '
        '"off": not sandboxed (agents reach all you can).'),
    Key("sandbox", "writable", "sandbox_writable", "strlist", [],
        "More paths agents may write (`~` is your home; a folder ending with `/` is made if missing), "
        "besides their checkout, a private /tmp and their CLI's `state_paths`; checks and `[worktrees] "
        "teardown` may write them too."),
    Key("sandbox", "hide", "sandbox_hide", "strlist", list(DEFAULT_HIDDEN),
        "Paths agents cannot see at all (`~` is your home)."),
    Key("sandbox", "network", "sandbox_network", "network", "allowlist",
        '"allowlist": no network of its own; only the hosts of `allow` and its CLI\'s API hosts (and the '
        "host of a `*_BASE_URL` in its environment), through a proxy Hive runs; \"open\": the machine's "
        'network; "none": no network at all. Checks and scripts get `allow` only.'),
    Key("sandbox", "allow", "sandbox_allow", "hostlist", [],
        'More hosts a sandboxed agent, script or check may reach with `network = "allowlist"`, e.g. '
        '["pypi.org", "files.pythonhosted.org", "*.npmjs.org", "127.0.0.1:8080"]: a host at any port, '
        "`host:port` at that port only, `*.x.org` any name under x.org (`*.x.org:443`: at that port); "
        'an IPv6 address bare or in brackets (`"::1"`, `"[::1]:8080"`). A URL or a path is an error.'),
    Key("sandbox", "pass_env", "sandbox_pass_env", "strlist", [],
        "Variables of your environment a sandboxed agent or check still gets although they look like "
        "secrets (`*TOKEN*`, `*SECRET*`, `*_KEY`, `AWS_*`, …; patterns as in `fnmatch`)."),
    Key("budget", "run_usd", "budget_run_usd", "usd", 0,
        "USD per `doit` run: at the cap no new task starts, running agents finish, and doit exits 1."),
    Key("web", "token", "web_token", "str", "",
        "The token `hive web` asks of every request (in the URL it prints, then a cookie), as `--token` does; "
        "needed to serve on any address but loopback. Keep this file private when you set it."),
    Key("logs", "max_mb", "log_max_mb", "posint", 10,
        "A task's log keeps the first and the last this many MB of what its agents printed (over all its "
        "attempts, on a Ray node too); what lies between is dropped, and a line where it was says how "
        "much. An agent that prints without end cannot fill the disk: a log takes at most about 3 × this."),
)  # fmt: skip

# [agents.NAME]: a profile; a table named like a built-in overrides only the keys it sets
AGENT_KEYS: tuple[Key, ...] = (
    Key("agents.NAME", "command", "command", "command", None,
        "How to start the agent: `{prompt}` becomes a short instruction pointing at its brief, "
        "`{context_file}` the brief's path. Needed for a new profile.",
        example=["python3", "/opt/bot.py", "{context_file}"]),
    Key("agents.NAME", "context_file", "context_file", "filename", "AGENTS.md",
        "The file name the agent reads its brief from, in its worktree (never committed)."),
    Key("agents.NAME", "mode", "mode", "mode", "headless",
        "interactive: a TUI that stays open, watched for first-run prompts on its screen. "
        "headless: runs and exits."),
    Key("agents.NAME", "exit_zero_is_done", "exit_zero_is_done", "bool", False,
        "Exiting 0 without `hive done` counts as done (for an agent that cannot run commands)."),
    Key("agents.NAME", "stall_patterns", "stall_patterns", "regexlist", [],
        "Screen text meaning \"stuck at a prompt\": shown within the grace period, the attempt fails at once."),
    Key("agents.NAME", "env", "env", "env", {},
        "Extra environment variables for the agent."),
    Key("agents.NAME", "stream", "stream", "stream", "",
        'The reader of its output for errors, rate limits and usage ("text" suits any CLI); "" only watches '
        "that its output grows."),
    Key("agents.NAME", "budget_args", "budget_args", "strlist", [],
        "Appended to the command when a task has a budget; `{usd}` becomes what is left."),
    Key("agents.NAME", "ignore", "ignore", "strlist", [],
        "Files the agent leaves in the worktree that are never the task's work (never merged)."),
    Key("agents.NAME", "linger", "linger", "seconds", 0,
        "Seconds it may take to end its turn after signalling (its usage report comes last)."),
    Key("agents.NAME", "model", "model", "str", "",
        "The model it uses, for pricing when its output does not name one."),
    Key("agents.NAME", "state_paths", "state_paths", "strlist", [],
        "What the CLI itself must write outside the checkout (`~` is your home), writable in the sandbox; "
        'a folder ends with `/` (made if missing), e.g. ["~/.mycli/", "~/.mycli.json"]. The built-in '
        "profiles set their own."),
)  # fmt: skip

PRICES_EXAMPLE = {"claude-opus-*": {"input": 15.0, "output": 75.0}, "my-local-model": {"input": 0, "output": 0}}


def by_section() -> dict[str, dict[str, Key]]:
    """section -> key name -> Key, in the schema's order."""
    out: dict[str, dict[str, Key]] = {}
    for key in KEYS:
        out.setdefault(key.section, {})[key.name] = key
    return out
