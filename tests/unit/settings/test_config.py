"""`.hive/config.toml`: defaults, durations, validation naming the key, agent profiles."""

from __future__ import annotations

import textwrap

import pytest

from hive.agent_clis import BUILTIN_PROFILES
from hive.errors import HiveError
from hive.settings.config import Config, load_config, parse_duration


def config_from(tmp_path, toml):
    path = tmp_path / "config.toml"
    path.write_text(textwrap.dedent(toml).lstrip("\n"))
    return load_config(path)


def problems_of(tmp_path, toml):
    with pytest.raises(HiveError) as err:
        config_from(tmp_path, toml)
    return err.value.problems


# --- defaults -----------------------------------------------------------------------------------


def test_missing_file_gives_the_documented_defaults(tmp_path):
    config = load_config(tmp_path / "nope.toml")
    assert config == Config()
    assert config.default_agent == "claude" and config.task_timeout == 3600
    assert config.spawn_grace_period == 30 and config.stuck_threshold == 900
    assert config.max_attempts == 2 and config.main_branch == "main" and config.auto_merge is True
    assert config.require_tests is False and config.test_command == "make test"
    assert config.worktree_base == "worktrees" and config.max_workers == 4
    assert config.gate_first_batch is False and config.hub_threshold == 0


def test_empty_file_gives_defaults(tmp_path):
    assert config_from(tmp_path, "") == Config()


def test_main_branch_fallback_applies_only_when_not_configured(tmp_path):
    assert load_config(tmp_path / "nope.toml", main_branch_fallback="trunk").main_branch == "trunk"
    path = tmp_path / "c.toml"
    path.write_text('[merge]\nmain_branch = "develop"\n')
    assert load_config(path, main_branch_fallback="trunk").main_branch == "develop"


@pytest.mark.parametrize("builtin", ["claude", "codex", "aider", "gemini"])
def test_builtin_profiles_exist_and_take_the_prompt(builtin):
    profile = Config().agents[builtin]
    assert profile.name == builtin and profile.command
    assert "{prompt}" in profile.command and profile.context_file.endswith(".md")


def test_headless_profiles_read_their_stream_and_only_interactive_ones_watch_the_screen():
    agents = Config().agents
    for name in ("claude", "codex", "aider", "gemini"):
        assert agents[name].stream == name and agents[name].stall_patterns == ()
    assert agents["claude-interactive"].stall_patterns and not agents["claude-interactive"].stream
    assert "--json" in agents["codex"].command and "allow_login_shell=false" in agents["codex"].command
    assert "--no-gitignore" in agents["aider"].command and agents["aider"].ignore == (".aider*",)


def test_a_task_budget_becomes_claudes_own_flag_and_nothing_for_others():
    agents = Config().agents
    assert agents["claude"].budget_argv(1.5) == ["--max-budget-usd", "1.5000"]
    assert agents["codex"].budget_argv(1.5) == []


def test_profile_keys_of_round_two_are_validated(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[agents.x]\ncommand = ["x"]\nstream = "morse"\nlinger = -1\nignore = "y"\n')
    with pytest.raises(HiveError) as e:
        load_config(path)
    assert len(e.value.problems) == 3
    for key in ("agents.x.stream", "agents.x.ignore", "agents.x.linger"):
        assert any(key in problem for problem in e.value.problems), (key, e.value.problems)


# --- durations ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("30s", 30),
        ("45m", 2700),
        ("1h", 3600),
        ("250ms", 0.25),
        ("1.5h", 5400),
        ("90", 90),
        (" 2m ", 120),
        (90, 90),
        (0, 0),
        (2.5, 2.5),
    ],
)
def test_parse_duration_accepts_units_and_plain_seconds(value, seconds):
    assert parse_duration(value, "x") == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["soon", "5 minutes", "-5s", "1d", "", True, -1, [1], None])
def test_parse_duration_rejects_bad_values_naming_where(value):
    with pytest.raises(HiveError, match=r"^execution\.task_timeout: .* is not a duration"):
        parse_duration(value, "execution.task_timeout")


def test_config_durations_are_converted_to_seconds(tmp_path):
    config = config_from(
        tmp_path,
        """
        [execution]
        task_timeout = "45m"
        spawn_grace_period = 90
        stuck_threshold = "1h"
        """,
    )
    assert (config.task_timeout, config.spawn_grace_period, config.stuck_threshold) == (2700, 90, 3600)


def test_bad_duration_in_config_names_the_key(tmp_path):
    [msg] = problems_of(tmp_path, '[execution]\nspawn_grace_period = "a while"\n')
    assert "config.toml: execution.spawn_grace_period: 'a while' is not a duration" in msg


# --- validation ---------------------------------------------------------------------------------


def test_every_documented_key_is_accepted(tmp_path):
    config = config_from(
        tmp_path,
        """
        [agent]
        default = "codex"
        [execution]
        max_attempts = 3
        [merge]
        main_branch = "trunk"
        auto_merge = false
        require_tests = true
        test_command = "pytest -q"
        [worktrees]
        base_path = "wt"
        setup = "make deps"
        copy = [".env", "secrets.json"]
        [parallel]
        max_workers = 8
        [gates]
        first_batch = true
        hub_threshold = 3
        """,
    )
    assert config.default_agent == "codex" and config.max_attempts == 3
    assert (config.main_branch, config.auto_merge, config.require_tests) == ("trunk", False, True)
    assert config.test_command == "pytest -q" and config.worktree_base == "wt"
    assert config.worktree_setup == "make deps" and config.worktree_copy == (".env", "secrets.json")
    assert config.max_workers == 8 and config.gate_first_batch is True and config.hub_threshold == 3


def test_unknown_section_is_named(tmp_path):
    [msg] = problems_of(tmp_path, "[executon]\nmax_attempts = 3\n")
    assert "unknown section [executon]" in msg and "execution" in msg


def test_unknown_key_is_named_with_its_section(tmp_path):
    [msg] = problems_of(tmp_path, "[execution]\ntask_timout = '5m'\n")
    assert "unknown key execution.task_timout" in msg and "task_timeout" in msg


def test_top_level_key_outside_a_section_is_an_error(tmp_path):
    [msg] = problems_of(tmp_path, "max_workers = 2\n")
    assert "max_workers" in msg


@pytest.mark.parametrize(
    "toml, words",
    [
        ("[execution]\nmax_attempts = 0\n", ("execution.max_attempts = 0", ">= 1")),
        ('[merge]\nauto_merge = "yes"\n', ("merge.auto_merge = 'yes'", "true or false")),
        ("[parallel]\nmax_workers = true\n", ("parallel.max_workers = True", ">= 1")),
        ("[gates]\nhub_threshold = -1\n", ("gates.hub_threshold = -1", ">= 0")),
        ('[worktrees]\ncopy = ".env"\n', ("worktrees.copy", "list of strings")),
        ("[merge]\nmain_branch = 5\n", ("merge.main_branch = 5", "a string")),
    ],
)
def test_wrong_value_type_is_named(tmp_path, toml, words):
    [msg] = problems_of(tmp_path, toml)
    for w in words:
        assert w in msg


def test_all_config_problems_are_reported_at_once(tmp_path):
    problems = problems_of(
        tmp_path,
        """
        [execution]
        max_attempts = 0
        task_timeout = "soon"
        [merge]
        auto_merge = "yes"
        [foo]
        x = 1
        """,
    )
    assert len(problems) == 4, problems
    joined = "\n".join(problems)
    for key in ("execution.max_attempts", "execution.task_timeout", "merge.auto_merge", "[foo]"):
        assert key in joined


def test_toml_syntax_error_is_a_hive_error_naming_the_file(tmp_path):
    with pytest.raises(HiveError) as err:
        config_from(tmp_path, "[execution\nmax_attempts = 2\n")
    assert "config.toml" in str(err.value) and "TOML" in str(err.value)


# --- agent profiles -----------------------------------------------------------------------------


def test_custom_agent_profile_with_placeholders(tmp_path):
    config = config_from(
        tmp_path,
        """
        [agent]
        default = "my-bot"
        [agents.my-bot]
        command = ["python3", "/opt/bot.py", "--brief={context_file}", "{prompt}"]
        context_file = "BOT.md"
        mode = "interactive"
        exit_zero_is_done = true
        stall_patterns = ["Continue\\\\?"]
        env = { B = "2", A = "1" }
        """,
    )
    bot = config.agents["my-bot"]
    assert config.default_agent == "my-bot" and "claude" in config.agents
    assert bot.command == ("python3", "/opt/bot.py", "--brief={context_file}", "{prompt}")
    assert (bot.context_file, bot.mode, bot.exit_zero_is_done) == ("BOT.md", "interactive", True)
    assert bot.env == (("A", "1"), ("B", "2"))
    assert bot.stalled("Continue? [y/n]") == "Continue\\?" and bot.stalled("working...") is None
    assert bot.argv("do task 1", "/w/BOT.md") == ["python3", "/opt/bot.py", "--brief=/w/BOT.md", "do task 1"]


def test_new_profile_defaults_to_headless_and_agents_md(tmp_path):
    bot = config_from(tmp_path, '[agents.x]\ncommand = ["x"]\n').agents["x"]
    assert (bot.mode, bot.context_file, bot.exit_zero_is_done, bot.env) == ("headless", "AGENTS.md", False, ())


def test_argv_keeps_a_hostile_prompt_as_one_literal_argument(tmp_path):
    bot = config_from(tmp_path, '[agents.x]\ncommand = ["bot", "{prompt}", "{context_file}"]\n').agents["x"]
    prompt = 'fix "it"; $(rm -rf /) `id` && echo {prompt}'
    argv = bot.argv(prompt, "/abs/AGENTS.md")
    assert argv == ["bot", prompt, "/abs/AGENTS.md"]


def test_argv_does_not_rewrite_placeholder_text_inside_the_prompt():
    prompt = "Task: document the {context_file} placeholder"
    argv = BUILTIN_PROFILES["claude"].argv(prompt, "/abs/CLAUDE.md")
    assert argv.count(prompt) == 1


def test_placeholder_text_in_prompt_stays_a_single_argv_element():
    profile = BUILTIN_PROFILES["codex"]
    argv = profile.argv("see {context_file} and $(rm -rf /)", "/abs/AGENTS.md")
    assert len(argv) == len(profile.command)
    assert argv[-1].endswith("and $(rm -rf /)")


def test_command_given_as_one_string_is_an_error(tmp_path):
    [msg] = problems_of(tmp_path, '[agents.x]\ncommand = "my-agent --fast {prompt}"\n')
    assert "agents.x.command must be a non-empty list of strings" in msg


@pytest.mark.parametrize("command", ["[]", '["ok", 3]'])
def test_empty_or_non_string_command_is_an_error(tmp_path, command):
    [msg] = problems_of(tmp_path, f"[agents.x]\ncommand = {command}\n")
    assert "agents.x.command" in msg


def test_new_profile_without_command_is_an_error(tmp_path):
    [msg] = problems_of(tmp_path, '[agents.x]\ncontext_file = "X.md"\n')
    assert "agents.x.command" in msg


def test_overriding_a_builtin_context_file_keeps_its_command(tmp_path):
    claude = config_from(tmp_path, '[agents.claude]\ncontext_file = "AGENTS.md"\n').agents["claude"]
    builtin = BUILTIN_PROFILES["claude"]
    assert claude.context_file == "AGENTS.md"
    assert claude.command == builtin.command and claude.stall_patterns == builtin.stall_patterns
    assert BUILTIN_PROFILES["claude"].context_file == "CLAUDE.md"  # the built-in table is untouched


@pytest.mark.parametrize(
    "toml, words",
    [
        ('[agents.x]\ncommand = ["x"]\nmode = "tui"\n', ("agents.x.mode = 'tui'",)),
        ('[agents.x]\ncommand = ["x"]\ncolour = "red"\n', ("agents.x: unknown key 'colour'",)),
        ('[agents.x]\ncommand = ["x"]\ncontext_file = "../up.md"\n', ("agents.x.context_file", "plain file name")),
        ('[agents.x]\ncommand = ["x"]\nexit_zero_is_done = "yes"\n', ("agents.x.exit_zero_is_done",)),
        ('[agents.x]\ncommand = ["x"]\nenv = { A = 1 }\n', ("agents.x.env",)),
        ('[agents.x]\ncommand = ["x"]\nstall_patterns = "ok"\n', ("agents.x.stall_patterns",)),
        ("[agents]\nx = 5\n", ("agents.x must be a table",)),
    ],
)
def test_bad_agent_profile_value_is_named(tmp_path, toml, words):
    [msg] = problems_of(tmp_path, toml)
    for w in words:
        assert w in msg


def test_non_string_context_file_is_a_named_error_not_a_crash(tmp_path):
    with pytest.raises(HiveError, match=r"agents\.x\.context_file"):
        config_from(tmp_path, '[agents.x]\ncommand = ["x"]\ncontext_file = 5\n')


def test_invalid_stall_pattern_regex_is_a_named_error(tmp_path):
    with pytest.raises(HiveError, match=r"agents\.x\.stall_patterns"):
        config_from(tmp_path, '[agents.x]\ncommand = ["x"]\nstall_patterns = ["(unclosed"]\n')


def test_default_agent_naming_an_unknown_profile_is_an_error(tmp_path):
    [msg] = problems_of(tmp_path, '[agent]\ndefault = "robot"\n')
    assert "agent.default = 'robot' is not a known agent profile" in msg
    assert "claude" in msg and "codex" in msg
