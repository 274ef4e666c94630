"""`[sandbox] allow` is checked as the config loads, entry by entry, as the proxy reads them: an
entry it cannot read (a URL, a path) would allow nothing, every connection refused without a
word, so it is an error naming the entry and how to write one (issue 37)."""

from __future__ import annotations

import pytest

from hive.errors import HiveError
from hive.settings.config import load_config

HOW = 'write a host name, host:port or *.domain (e.g. "pypi.org", "127.0.0.1:8080", "*.npmjs.org")'


def problems_of(tmp_path, allow: str) -> list[str]:
    path = tmp_path / "config.toml"
    path.write_text(f"[sandbox]\nallow = {allow}\n")
    with pytest.raises(HiveError) as err:
        load_config(path)
    return err.value.problems


def test_hosts_ports_wildcards_and_ipv6_addresses_load_as_written(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[sandbox]\nallow = ["pypi.org", "127.0.0.1:45435", "*.npmjs.org", "[::1]:8080", "::1"]\n')
    assert load_config(path).sandbox_allow == ("pypi.org", "127.0.0.1:45435", "*.npmjs.org", "[::1]:8080", "::1")


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("http://pypi.org", 'it is a URL, whose host is "pypi.org"'),
        ("https://x:1/", 'it is a URL, whose host is "x:1"'),
        ("/x", 'it has a "/" (a host has no path)'),
        ("a/b", 'it has a "/" (a host has no path)'),
        ("", "it is empty"),
        (" ", "it is empty"),
        ("pypi .org", "it has a space in it"),
        ("x:0", "its port 0 is not 1-65535"),
        ("x:70000", "its port 70000 is not 1-65535"),
        ("x:abc", "its port 'abc' is not a number"),
        ("*", '"*" may only begin it, as "*.npmjs.org" does (any name under npmjs.org)'),
        ("a.*.org", '"*" may only begin it, as "*.npmjs.org" does (any name under npmjs.org)'),
        ("[::1", 'an IPv6 address in brackets is written "[::1]" or "[::1]:8080"'),
    ],
)  # fmt: skip
def test_an_entry_that_is_no_host_is_an_error_naming_it_and_how_to_write_one(tmp_path, entry: str, why: str):
    path = tmp_path / "config.toml"
    assert problems_of(tmp_path, f'["pypi.org", "{entry}"]') == [
        f"{path}: sandbox.allow: {entry!r} is not a host: {why}; {HOW}"
    ]


def test_every_bad_entry_is_named_at_once(tmp_path):
    problems = problems_of(tmp_path, '["http://a", "ok.org", "b/c"]')
    assert len(problems) == 2
    assert "'http://a' is not a host" in problems[0] and "'b/c' is not a host" in problems[1]


def test_allow_must_be_a_list_of_strings(tmp_path):
    path = tmp_path / "config.toml"
    expected = 'a list of hosts: "pypi.org", "127.0.0.1:8080" (that port only) or "*.npmjs.org"'
    assert problems_of(tmp_path, '"pypi.org"') == [f"{path}: sandbox.allow = 'pypi.org' must be {expected}"]
    assert problems_of(tmp_path, "[1]") == [f"{path}: sandbox.allow = [1] must be {expected}"]
