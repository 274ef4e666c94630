"""`[notify]` in `.hive/config.toml`: a command is an argv list (never one shell
string), a webhook an http(s) URL; mistakes name the file, the key and the fix."""

from __future__ import annotations

import pytest

from hive.errors import HiveError
from hive.project import load_config
from hive.settings.config import Config
from hive.settings.schema import DEFAULT_NOTIFY_EVENTS


def load(tmp_path, body: str) -> Config:
    path = tmp_path / "config.toml"
    path.write_text("[notify]\n" + body)
    return load_config(path)


def problem(tmp_path, body: str) -> str:
    with pytest.raises(HiveError) as err:
        load(tmp_path, body)
    (line,) = err.value.problems
    assert line.startswith(f"{tmp_path / 'config.toml'}: "), line
    return line


def test_notify_is_off_by_default(tmp_path):
    assert Config().notify == {}
    assert load_config(tmp_path / "missing.toml").notify == {}


def test_a_command_and_a_webhook_are_read(tmp_path):
    config = load(tmp_path, 'command = ["notify.py", "--to", "me"]\nwebhook = "https://hooks.example.com/x?y=1"\n')
    assert config.notify == {"command": ("notify.py", "--to", "me"), "webhook": "https://hooks.example.com/x?y=1"}
    assert load(tmp_path, 'webhook = "http://127.0.0.1:8080/"\n').notify == {"webhook": "http://127.0.0.1:8080/"}


@pytest.mark.parametrize("value", ['"notify-send Hive done"', "[]", "[1, 2]", "true"])
def test_a_command_must_be_a_list_of_strings_not_a_shell_string(tmp_path, value):
    line = problem(tmp_path, f"command = {value}\n")
    assert "notify.command" in line and ("list of strings" in line or "non-empty string" in line), line


def test_a_shell_string_command_is_told_how_to_write_it(tmp_path):
    line = problem(tmp_path, 'command = "notify-send hi"\n')
    assert 'e.g. ["python3", "/opt/notify.py"] (not one shell string)' in line


def test_an_empty_part_of_a_command_is_an_error(tmp_path):
    assert "every part must be a non-empty string" in problem(tmp_path, 'command = ["notify.py", ""]\n')


@pytest.mark.parametrize(
    "value",
    ['"hooks.example.com/x"', '"ftp://example.com/x"', '"file:///etc/passwd"', '"http://"', "3", '"http://[::1"'],
)
def test_a_webhook_must_be_an_http_or_https_url(tmp_path, value):
    line = problem(tmp_path, f"webhook = {value}\n")
    assert "notify.webhook" in line and "must be an http:// or https:// URL" in line, line


def test_an_unknown_notify_key_names_the_known_ones(tmp_path):
    line = problem(tmp_path, 'email = "me@example.com"\n')
    assert "unknown key notify.email; known: events, command, webhook" in line


def test_events_choose_what_the_channels_are_told_and_an_unknown_one_is_named(tmp_path):
    assert Config().notify_events == DEFAULT_NOTIFY_EVENTS and "task_done" not in DEFAULT_NOTIFY_EVENTS
    config = load(tmp_path, 'events = ["task_done", "run_finished"]\ncommand = ["n.py"]\n')
    assert config.notify_events == ("task_done", "run_finished") and config.notify == {"command": ("n.py",)}
    line = problem(tmp_path, 'events = ["task_finished"]\n')
    assert "notify.events = ['task_finished'] must be a list of event names: checkpoint, gate" in line
