"""hive/agent_clis: one module per built-in CLI, and what the rest of Hive looks up is
derived from their records — the built-in profiles, the stream readers by name, a
profile's CLI by its program's name."""

from __future__ import annotations

from hive.agent_clis import AGENT_CLIS, BUILTIN_PROFILES, READERS, cli_for, codex, configured_model, reader
from hive.agent_clis.claude import ClaudeReader
from hive.agent_clis.stream import StreamReader


def test_the_builtin_profiles_are_the_clis_profiles_in_the_order_hive_init_lists_them():
    assert list(BUILTIN_PROFILES) == ["claude", "claude-interactive", "codex", "aider", "gemini"]
    assert [p for cli in AGENT_CLIS.values() for p in cli.profiles] == list(BUILTIN_PROFILES.values())


def test_each_builtin_profile_runs_its_clis_binary_and_reads_that_clis_stream():
    for binary, cli in AGENT_CLIS.items():
        assert cli.binary == binary and cli.install and cli.reader is READERS[binary]
        for profile in cli.profiles:
            assert profile.command[0] == binary and profile.stream in ("", binary)


def test_the_readers_by_stream_name_keep_the_plain_text_one():
    assert sorted(READERS) == ["aider", "claude", "codex", "gemini", "text"]
    assert type(reader("claude")) is ClaudeReader and type(reader("text")) is StreamReader
    assert reader("") is None and reader("nope") is None


def test_a_program_hive_does_not_know_declares_nothing():
    assert cli_for("codex") is codex.CLI
    unknown = cli_for("python3")
    assert unknown.binary == "python3" and unknown.profiles == () and not unknown.install and unknown.reader is None


def test_the_configured_model_is_read_for_a_profile_that_reads_codexs_stream(tmp_path):
    (tmp_path / "config.toml").write_text('model = "gpt-test"\n')
    env = {"CODEX_HOME": str(tmp_path), "HOME": str(tmp_path)}
    assert configured_model("codex", env) == "gpt-test"
    for other in ("claude", "gemini", "aider", "text", ""):  # their output names the model, or nothing does
        assert configured_model(other, env) == ""
