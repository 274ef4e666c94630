"""`[sandbox] allow` as the proxy reads and applies it (hive/sandbox/proxy.py `rule`, `allowed`):
`host` at any port, `host:port` at that port only, `*.x.org` any name under x.org, IPv6
addresses bare or in brackets; anything else is no entry at all (issue 37)."""

from __future__ import annotations

import pytest

from hive.sandbox import network, proxy

ALLOW = ["pypi.org", "127.0.0.1:45435", "*.npmjs.org", "*.corp.example:8443", "[::1]:8080", "fe80::2"]


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("pypi.org", 443, True),
        ("pypi.org", 8080, True),  # a bare host: any port
        ("PyPI.ORG.", 443, True),  # case and a trailing dot do not matter
        ("files.pypi.org", 443, False),  # only `*.` reaches below a name
        ("127.0.0.1", 45435, True),
        ("127.0.0.1", 45436, False),  # host:port: that port only
        ("127.0.0.1", 80, False),
        ("localhost", 45435, False),  # the name asked for decides, not where it leads
        ("registry.npmjs.org", 443, True),
        ("a.b.npmjs.org", 9999, True),
        ("npmjs.org", 443, False),  # `*.x` is what is under x, not x itself
        ("evilnpmjs.org", 443, False),
        ("npmjs.org.evil.com", 443, False),
        ("git.corp.example", 8443, True),
        ("git.corp.example", 443, False),
        ("::1", 8080, True),
        ("[::1]", 8080, True),  # as a CONNECT writes it
        ("0:0:0:0:0:0:0:1", 8080, True),  # the same address written out
        ("::1", 8081, False),
        ("fe80::2", 22, True),  # a bare IPv6 address: any port
        ("FE80:0::2", 443, True),
        ("fe80::3", 443, False),
    ],
)  # fmt: skip
def test_an_entry_allows_its_host_at_its_port_or_at_any(host: str, port: int, expected: bool):
    assert proxy.allowed(host, ALLOW, port) is expected


def test_without_a_port_only_an_entry_for_any_port_matches():
    assert proxy.allowed("pypi.org", ["pypi.org"]) is True
    assert proxy.allowed("127.0.0.1", ["127.0.0.1:8080"]) is False


def test_an_entry_the_proxy_cannot_read_allows_nothing():
    """Such an entry from the config stops the run as it loads; one from elsewhere (a host a
    `*_BASE_URL` names) must not let anything through either."""
    assert proxy.allowed("pypi.org", ["http://pypi.org", "pypi.org/simple", "pypi.org:0"], 443) is False


@pytest.mark.parametrize(
    ("entry", "read"),
    [
        ("pypi.org", ("pypi.org", None)),
        ("127.0.0.1:45435", ("127.0.0.1", 45435)),
        ("Files.PythonHosted.org.", ("files.pythonhosted.org", None)),
        ("*.NPMjs.org", ("*.npmjs.org", None)),
        ("*.npmjs.org:443", ("*.npmjs.org", 443)),
        ("localhost:1", ("localhost", 1)),
        ("my_host:65535", ("my_host", 65535)),
        ("[::1]", ("::1", None)),
        ("[::1]:8080", ("::1", 8080)),
        ("::1", ("::1", None)),
        ("0:0::1", ("::1", None)),
        ("2001:DB8::1", ("2001:db8::1", None)),
    ],
)  # fmt: skip
def test_an_entry_is_read_as_a_host_and_a_port_or_none(entry: str, read: tuple[str, int | None]):
    assert proxy.rule(entry) == read


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("http://pypi.org", 'it is a URL, whose host is "pypi.org"'),
        ("https://x:1/", 'it is a URL, whose host is "x:1"'),
        ("http://[::1]:8080/v1", 'it is a URL, whose host is "[::1]:8080"'),
        ("file:///etc", "it is a URL"),
        ("/x", 'it has a "/" (a host has no path)'),
        ("a/b", 'it has a "/" (a host has no path)'),
        ("pypi.org/simple", 'it has a "/" (a host has no path)'),
        ("", "it is empty"),
        ("   ", "it is empty"),
        ("pypi .org", "it has a space in it"),
        (" pypi.org", "it has a space in it"),
        ("pypi.org\t", "it has a space in it"),
        ("x:0", "its port 0 is not 1-65535"),
        ("x:65536", "its port 65536 is not 1-65535"),
        ("x:-1", "its port '-1' is not a number"),
        ("x:http", "its port 'http' is not a number"),
        ("x:", 'it has no port after ":"'),
        (":8080", "it names no host"),
        ("*", '"*" may only begin it, as "*.npmjs.org" does (any name under npmjs.org)'),
        ("*npmjs.org", '"*" may only begin it, as "*.npmjs.org" does (any name under npmjs.org)'),
        ("registry.*.org", '"*" may only begin it, as "*.npmjs.org" does (any name under npmjs.org)'),
        ("*.*.org", '"*" may only begin it, as "*.npmjs.org" does (any name under npmjs.org)'),
        ("*.", "it names no host"),
        ("a..b", "its name has an empty part (two dots in a row, or one at its start)"),
        (".pypi.org", "its name has an empty part (two dots in a row, or one at its start)"),
        ("-x.org", 'a part of its name begins or ends with "-"'),
        ("a,b", "it has ',', which a host name cannot have"),
        ("user@pypi.org", "it has '@', which a host name cannot have"),
        ("bücher.de", "it has 'ü', which a host name cannot have"),
        ("a" * 64 + ".org", "it is longer than a host name can be"),
        ("a:b:c", 'it is not an IPv6 address, and a host:port has one ":"'),
        ("[::1", 'an IPv6 address in brackets is written "[::1]" or "[::1]:8080"'),
        ("[::1]8080", 'an IPv6 address in brackets is written "[::1]" or "[::1]:8080"'),
        ("[pypi.org]:443", "'pypi.org' in brackets is not an IPv6 address"),
        ("[::1]:0", "its port 0 is not 1-65535"),
    ],
)  # fmt: skip
def test_anything_else_is_no_entry_and_says_why(entry: str, why: str):
    with pytest.raises(ValueError) as e:
        proxy.rule(entry)
    assert str(e.value) == why


def test_the_sandbox_passes_on_only_entries_the_proxy_reads(tmp_path):
    """A `*_BASE_URL` of `http://a,b/` names the host "a,b": passed on, the proxy would split
    it at its comma into two hosts it allows."""
    way = network.way("allowlist", ["127.0.0.1:8080", " PyPI.org ", "a,b", "", "::1"], str(tmp_path), tmp_path / "r")
    assert way.socket is not None
    way.socket.parent.rmdir()  # made for the proxy's socket; no proxy runs here
    assert way.allow == ("127.0.0.1:8080", "pypi.org", "::1")
