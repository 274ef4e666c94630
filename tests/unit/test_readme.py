"""The README documents what Hive accepts: every option of every `hive` verb (on a line
that names the verb) and every plan field — `hive logs -n` and `Discovered from` were
missing (issue 10)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from hive.cli.main import _parser
from hive.plan.parser import FIELDS

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _verbs() -> dict[str, list[list[str]]]:
    """verb -> the option strings of each of its options (`-h` aside)."""
    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {
        verb: [a.option_strings for a in parser._actions if a.option_strings and "-h" not in a.option_strings]
        for verb, parser in sub.choices.items()
    }


@pytest.mark.parametrize("verb, options", sorted(_verbs().items()))
def test_every_hive_option_is_documented_next_to_its_verb(verb, options):
    lines = [line for line in README.splitlines() if re.search(rf"`hive {re.escape(verb)}\b", line)]
    assert lines, f"`hive {verb}` is not in the README"
    for strings in options:
        assert any(s in line for s in strings for line in lines), f"hive {verb} {strings[-1]} is not documented"


def test_hive_version_is_documented():
    assert "`hive --version`" in README


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_every_plan_field_is_documented(field):
    assert f"`{field}" in README.lower(), f"the plan field **{field}:** is not in the README"
