"""`[sandbox] allow` entries with a port (issue 37), through real `doit`, tmux, bubblewrap and
the fake agent: `host:port` lets that port through and no other; an entry that is no host stops
the run as the config loads, naming it."""

from __future__ import annotations

PLAN = """
### Task 1: Reach the one allowed port
fake: try-url http://127.0.0.1:{port}/allowed
fake: try-url http://127.0.0.1:{other}/other-port
fake: write a.txt a
fake: commit work
fake: signal done
"""


def test_a_host_port_entry_lets_that_port_through_and_refuses_the_same_host_at_another(
    repo, http_server, other_http_server
):
    port, other = http_server, other_http_server
    repo.configure(sandbox=f'mode = "on"\nallow = ["127.0.0.1:{port}"]\n')
    repo.write_plan("s", PLAN.format(port=port, other=other))
    r = repo.doit()
    assert r.returncode == 0, r.stderr + repo.hive("logs", "s:1").stdout
    log = repo.hive("logs", "s:1", "-n", "200").stdout
    assert f"try-url http://127.0.0.1:{port}/allowed: ok hello /allowed" in log, log
    assert f"try-url http://127.0.0.1:{other}/other-port: denied (HTTP 403)" in log, log
    assert f"hive sandbox: refused a connection to 127.0.0.1:{other} (not in [sandbox] allow)" in log
    assert repo.status_json()["tasks"][0]["refused_hosts"] == [f"127.0.0.1:{other}"]
    assert repo.file_on_main("a.txt") == "a\n"


def test_an_allow_entry_that_is_a_url_stops_the_run_naming_it(repo):
    repo.configure(sandbox='allow = ["pypi.org", "http://x"]\n')
    repo.write_plan("s", "### Task 1: Never starts\nfake: signal done\n")
    expected = (
        "sandbox.allow: 'http://x' is not a host: it is a URL, whose host is \"x\"; write a host name, "
        'host:port or *.domain (e.g. "pypi.org", "127.0.0.1:8080", "*.npmjs.org")'
    )
    for r in (repo.hive("status"), repo.doit()):
        assert r.returncode == 3, r.stdout + r.stderr
        assert expected in r.stderr and "Traceback" not in r.stdout + r.stderr, r.stderr
    assert repo.starts() == []
