"""The documentation says what Hive accepts and does (issue 21): the generated reference pages
match the code, the config `hive init` writes is the schema's, every `hive` option and plan
field is documented next to its verb or in the plan format (`hive logs -n` and `Discovered
from` were once missing), every error message a user can meet has a troubleshooting entry,
every install line names our distribution (PyPI's `hive` is another project), and the README
stays short with its two commands first. `mkdocs build --strict` (broken links, orphan pages)
runs in the README's test command."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from hive import project, reference
from hive.agent_clis.profile import AgentProfile
from hive.cli.main import _parser
from hive.configfile import config_toml
from hive.executors import EXECUTORS
from hive.notifiers import CHANNELS
from hive.plan.parser import FIELDS
from hive.settings.config import Config, convert, load_config
from hive.settings.schema import AGENT_KEYS, KEYS

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()
GENERATED = {DOCS / name for name in reference.PAGES}
WRITTEN = "\n".join(p.read_text() for p in sorted(DOCS.glob("*.md")) if p not in GENERATED)


# --- generated from the code -----------------------------------------------------------------------


@pytest.mark.parametrize("name", reference.PAGES)
def test_a_generated_reference_page_is_what_the_code_says(name):
    committed = (DOCS / name).read_text()
    assert committed == reference.pages()[name], f"docs/{name} is stale: run `python -m hive.reference docs`"


def test_the_schemas_defaults_are_the_configs(tmp_path):
    defaults, profile = Config(), AgentProfile("x", ("x",))
    for key in KEYS:
        if key.default is not None:
            assert convert(key.default, key.kind, key.dotted) == getattr(defaults, key.field), key.dotted
    for kind, plugin in EXECUTORS.items():  # an executor's own settings: its defaults are what it is given
        path = _write(tmp_path / f"{kind}.toml", f'[executor]\nkind = "{kind}"\n')
        options = project.load_config(path).executor_options
        assert options == {key.name: convert(key.default, key.kind, key.dotted) for key in plugin.keys}, kind
    for key in AGENT_KEYS:
        if key.default is not None:  # a profile holds TOML's lists and tables as tuples
            held = {list: tuple, dict: lambda d: tuple(sorted(d.items()))}.get(type(key.default), lambda v: v)
            assert getattr(profile, key.field) == held(key.default), key.dotted


def test_the_config_hive_init_writes_lists_every_key_and_loads_back_uncommented(tmp_path):
    text = config_toml("trunk")
    assert load_config(_write(tmp_path / "as-written.toml", text)) == Config(main_branch="trunk")
    channels = [channel.key for channel in CHANNELS.values()]
    for key in (*KEYS, *AGENT_KEYS, *channels):
        assert re.search(rf"^#? ?{key.name} = ", text, re.M), f"{key.dotted} is not in the config hive init writes"
    # every `# key = value` line uncommented (the descriptions are `##`): the defaults, and the examples
    uncommented = re.sub(r"^# (?=\[|\"|[a-z_]+ = )", "", text, flags=re.M)
    # (every executor's settings at once, which no one config holds: [executor] unchecked here)
    config = load_config(_write(tmp_path / "uncommented.toml", uncommented), channels=channels)
    for key in KEYS:
        if key.default is not None:
            assert getattr(config, key.field) == getattr(Config(), key.field) or key.dotted == "merge.main_branch"
    assert config.agents["my-bot"].command == ("python3", "/opt/bot.py", "{context_file}")
    assert config.notify == {"command": ("python3", "/opt/hive-notify.py"), "webhook": "https://hooks.example.com/hive"}
    assert config.prices["claude-opus-*"] == (15.0, 75.0)


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# --- written by hand, checked against the code -----------------------------------------------------


def _verbs() -> dict[str, list[list[str]]]:
    """verb -> the option strings of each of its options (`-h` aside)."""
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {
        verb: [a.option_strings for a in parser._actions if a.option_strings and "-h" not in a.option_strings]
        for verb, parser in sub.choices.items()
    }


@pytest.mark.parametrize("verb, options", sorted(_verbs().items()))
def test_every_hive_option_is_explained_next_to_its_verb(verb, options):
    lines = [line for line in WRITTEN.splitlines() if re.search(rf"`hive {re.escape(verb)}\b", line)]
    assert lines, f"`hive {verb}` is not in the docs"
    for strings in options:
        assert any(s in line for s in strings for line in lines), f"hive {verb} {strings[-1]} is not documented"


def test_hive_version_is_documented():
    assert "`hive --version`" in WRITTEN


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_every_plan_field_is_documented(field):
    assert f"`{field}" in (DOCS / "plans.md").read_text().lower(), f"the plan field **{field}:** is not in plans.md"


# --- every error message has a troubleshooting entry ------------------------------------------------


def _constant_parts(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    if isinstance(node, ast.BinOp):
        return _constant_parts(node.left) + _constant_parts(node.right)
    return []


def _error_messages() -> list[tuple[str, str]]:
    """(where, the longest fixed wording) of every user error Hive raises or collects: a
    HiveError, or a problem appended to a `problems` list (plans, config). A message made
    only of values (`HiveError(*problems)`) or with fewer than three fixed words is left out."""
    found = []
    for path in sorted((ROOT / "hive").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            is_error = isinstance(func, ast.Name) and func.id == "HiveError"
            is_problem = (
                isinstance(func, ast.Attribute)
                and func.attr == "append"
                and isinstance(func.value, ast.Name)
                and func.value.id.endswith("problems")
            )
            if not (is_error or is_problem):
                continue
            parts = [" ".join(p.split()) for p in _constant_parts(node.args[0])]
            wording = max(parts, key=len, default="").strip(" :;,.'")
            if len(wording.split()) >= 3:
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", wording))
    return found


def test_the_scan_finds_the_errors_it_is_for():
    wordings = [w for _, w in _error_messages()]
    assert any("is not a duration" in w for w in wordings)  # a config value
    assert any("depends on unknown task" in w for w in wordings)  # a plan
    assert len(wordings) > 60


@pytest.mark.parametrize("where, wording", _error_messages())
def test_every_error_message_has_a_troubleshooting_entry(where, wording):
    page = " ".join((DOCS / "troubleshooting.md").read_text().split())
    assert wording in page, f"{where}: the error `{wording}` has no entry in docs/troubleshooting.md"


# --- our name, and a short README -------------------------------------------------------------------

_WRONG_NAME = re.compile(r"(?<![\w./-])hive\[|\b(?:pip|pipx|uv pip)\s+install\s+(?:-\S+\s+)*['\"]?hive(?![\w/.-])")


def _scanned() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "bench" / "README.md", *DOCS.glob("*.md"), ROOT / "setup.cfg"]
    return files + sorted((ROOT / "hive").rglob("*.py")) + sorted((ROOT / "hive").rglob("*.j2"))


def test_every_install_line_names_hive_agents_not_pypis_other_hive():
    wrong = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in _scanned()
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if _WRONG_NAME.search(line)
    ]
    assert not wrong, "install hive-agents (PyPI's `hive` is another project):\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    "line, wrong",
    [
        ("pip install 'hive[ray]'", True),
        ("pip install hive", True),
        ("pipx install hive", True),
        ("pip install -U hive", True),
        ("the optional extra hive[ray]", True),
        ("pip install 'hive-agents[ray]'", False),
        ("pip install hive-agents", False),
        ("pip install -e /path/to/hive", False),
        ("pip install ./hive", False),
        ("pipx install './hive[ray]'", False),
    ],
)
def test_the_name_scan_tells_our_distribution_from_theirs(line, wrong):
    assert bool(_WRONG_NAME.search(line)) is wrong


def test_the_readme_is_short_and_starts_with_the_two_commands():
    lines = README.splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the reference belongs in docs/"
    blocks = re.findall(r"```sh\n(.*?)\n```", README, re.S)
    assert "hive demo" in blocks[0] and "pip install" in blocks[0]
    assert "pytest" in blocks[1] and "mkdocs build --strict" in blocks[1]
    # `-q` hides the warnings and with them what --strict fails on (measured: mkdocs 1.6.1)
    assert not re.search(r"mkdocs build[^&]*\s(-q|--quiet)\b", blocks[1])
    assert README.index(blocks[1]) < README.index("## ")  # both before the first section
