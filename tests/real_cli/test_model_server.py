"""The scripted model server, alone (its wire formats) and with the real agent CLIs run
directly (not through Hive): a scripted two-step task completes and commits; a bad key and
a 429 make each CLI fail, or report and recover."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from cli_setup import MODEL, Ran, cli_environ, command, run_cli
from model_server import COMMIT_MESSAGE, INPUT_TOKENS, OUTPUT_TOKENS, ModelServer, parse
from model_server.script import Conversation

KEY = "test-key"
TASK = """\
Do the task below.

- model> write: notes/hello.txt :: hello\\nworld
- model> run: git add -A && git commit -qm "Add hello"
- model> say: hello committed
"""

# --- the script -----------------------------------------------------------------------------


def test_directives_are_read_from_lines_with_or_without_list_bullets():
    script = parse(
        "intro\n  * model> run: echo 1\n1. model> write: a b.txt :: x\\ny\nmodel> say: bye\nnot model> run: no\n"
    )
    assert [s.kind for s in script.steps] == ["run", "write"]
    assert script.steps[0].command == "echo 1"
    assert script.steps[1].path == "a b.txt" and script.steps[1].content == "x\ny"
    assert script.steps[1].shell() == "printf '%s' 'x\ny' > 'a b.txt'"
    assert script.say == "bye"
    assert parse("nothing here").say == "done" and not parse("nothing here").found


def test_hive_is_replaced_by_the_path_the_prompt_names(tmp_path: Path):
    brief = tmp_path / "brief.md"
    brief.write_text("- model> run: hive done\n- model> run: hivemind\n")
    prompt = f"Read {brief} now: it is your brief. Then run `hive done`; if `hive` is not found, it is `/opt/x/hive`."
    script = Conversation([prompt], [prompt], 0, {}).script()
    assert [s.command for s in script.steps] == ["/opt/x/hive done", "hivemind"]


# --- the wire formats, without a CLI ----------------------------------------------------------


def post(server: ModelServer, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict, str]:
    req = urllib.request.Request(
        server.url + path, data=json.dumps(body).encode(), headers={"content-type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def sse(text: str) -> list[Any]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ") and line != "data: [DONE]"]


BASH = {"name": "Bash", "input_schema": {"properties": {"command": {}, "description": {}}}}


def test_anthropic_stream_gives_a_tool_call_then_the_final_text():
    with ModelServer(api_key=KEY) as server:
        body: dict[str, Any] = {
            "model": "m",
            "stream": True,
            "tools": [BASH],
            "messages": [{"role": "user", "content": TASK}],
        }
        status, _, text = post(server, "/v1/messages?beta=true", body, {"x-api-key": KEY})
        events = sse(text)
        assert status == 200
        assert [e["type"] for e in events] == [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
        assert events[0]["message"]["usage"]["input_tokens"] == INPUT_TOKENS
        assert events[1]["content_block"]["name"] == "Bash"
        assert json.loads(events[2]["delta"]["partial_json"])["command"].startswith("mkdir -p notes && printf")
        assert events[4]["delta"]["stop_reason"] == "tool_use" and events[4]["usage"]["output_tokens"] == OUTPUT_TOKENS
        results = [{"type": "tool_result", "tool_use_id": "t", "content": ""}]
        body["messages"] += [{"role": "assistant", "content": []}, {"role": "user", "content": results}] * 2
        events = sse(post(server, "/v1/messages", body, {"x-api-key": KEY})[2])
        assert events[2]["delta"] == {"type": "text_delta", "text": "hello committed"}
        assert events[4]["delta"]["stop_reason"] == "end_turn"
        assert [r.main for r in server.log()] == [True, True]
        assert all("x-api-key" not in r.headers for r in server.log())


def test_each_api_answers_a_bad_key_a_rate_limit_and_overload_in_its_own_format():
    with ModelServer(api_key=KEY) as server:
        chat = {"messages": [{"role": "user", "content": "hi"}]}
        cases: list[tuple[str, dict[str, Any], str]] = [
            ("/v1/messages", {"messages": [{"role": "user", "content": "hi"}], "tools": [BASH]}, "x-api-key"),
            ("/v1/responses", {"input": "hi"}, "authorization"),
            ("/v1/chat/completions", chat, "authorization"),
            (
                "/v1beta/models/g:streamGenerateContent?alt=sse",
                {"contents": [], "tools": [{"functionDeclarations": [{"name": "run_shell_command"}]}]},
                "x-goog-api-key",
            ),
        ]
        openai = ("invalid_request_error", "invalid_api_key", "Incorrect API key p")
        errors = [
            ("authentication_error", None, "invalid x-api-key"),
            openai,
            openai,
            (None, 400, "API key not valid. "),
        ]
        for (path, body, header), expected in zip(cases, errors, strict=True):
            status, _, text = post(
                server, path, body, {header: "Bearer wrong" if header == "authorization" else "wrong"}
            )
            assert status == (400 if "v1beta" in path else 401), path
            error = json.loads(text)["error"]
            assert (error.get("type"), error.get("code"), error["message"][:19]) == expected, text
        server.gemini_auth_code = 401
        assert post(server, cases[3][0], cases[3][1], {"x-goog-api-key": "wrong"})[0] == 401
        server.api_key = None
        server.rate_limited_until = time.time() + 30
        for path, body, _ in cases:
            status, headers, text = post(server, path, body, {})
            assert status == 429 and 29 <= int(headers["retry-after"]) <= 30, path
            assert any(w in text for w in ("rate_limit_error", "rate_limit_exceeded", "RESOURCE_EXHAUSTED")), text
        server.rate_limited_until = 0
        server.overloaded = True
        assert [post(server, p, b, {})[0] for p, b, _ in cases] == [529, 503, 503, 503]
        assert "overloaded_error" in post(server, cases[0][0], cases[0][1], {})[2]


def test_side_requests_get_short_answers():
    """Gemini's router wants JSON of the schema it sends; Aider's commit-message request a line."""
    with ModelServer() as server:
        schema = {
            "type": "OBJECT",
            "properties": {"complexity_reasoning": {"type": "STRING"}, "complexity_score": {"type": "INTEGER"}},
        }
        body = {
            "contents": [{"role": "user", "parts": [{"text": TASK}]}],
            "generationConfig": {"responseJsonSchema": schema},
        }
        _, _, text = post(server, "/v1beta/models/flash-lite:generateContent", body, {})
        answer = json.loads(json.loads(text)["candidates"][0]["content"]["parts"][0]["text"])
        assert answer == {"complexity_reasoning": "simple", "complexity_score": 1}
        system = {"role": "system", "content": "Generate a one-line commit message for these changes."}
        _, _, text = post(
            server, "/v1/chat/completions", {"messages": [system, {"role": "user", "content": "diff"}]}, {}
        )
        reply = json.loads(text)
        assert reply["choices"][0]["message"]["content"] == COMMIT_MESSAGE
        assert reply["usage"] == {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100}
        _, _, text = post(
            server, "/v1/chat/completions", {"stream": True, "messages": [{"role": "user", "content": TASK}]}, {}
        )
        chunks = sse(text)
        assert (
            chunks[0]["choices"][0]["delta"]["content"] == "notes/hello.txt\n```\nhello\nworld\n```\n\nhello committed"
        )
        assert chunks[-1]["usage"]["completion_tokens"] == OUTPUT_TOKENS
        assert [r.main for r in server.log()] == [False, False, True]


# --- the real CLIs ----------------------------------------------------------------------------

TOOL_CLIS = ["claude", "codex", "gemini"]


def run(
    name: str,
    server: ModelServer | str,
    home: Path,
    repo: Path,
    prompt: str = TASK,
    *,
    api_key: str | None = None,
    max_retries: int | None = None,
    codex_model: str | None = None,
    json_events: bool = False,
    timeout: float = 90,
) -> Ran:
    """CLI `name` with its built-in profile's command line, in `repo`, against `server`."""
    env = cli_environ(name, server, home, api_key=api_key, max_retries=max_retries, codex_model=codex_model)
    brief = None
    if name == "aider":  # its profile gives the brief with --read
        brief = repo.parent / "brief.md"
        brief.write_text(prompt)
        prompt = f"Read {brief} now: it is your complete brief."
    return run_cli(command(name, prompt, read=brief, json_events=json_events), repo, env, timeout=timeout)


def commits(repo: Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(repo), "log", "--format=%s"], capture_output=True, text=True).stdout
    return out.splitlines()


def json_lines(output: str) -> list[dict[str, Any]]:
    events = []
    for line in output.splitlines():
        if line.startswith("{"):
            try:
                events.append(json.loads(line))
            except ValueError:
                pass
    return events


@pytest.mark.parametrize("name", [*TOOL_CLIS, "codex-mock_model"])
def test_a_scripted_two_step_task_runs_and_commits(name, cli_paths, model_server, home, git_repo):
    cli = name.split("-")[0]
    ran = run(cli, model_server, home, git_repo, codex_model=MODEL if name.endswith("mock_model") else None)
    assert ran.returncode == 0, ran.output
    assert commits(git_repo) == ["Add hello", "initial commit"], ran.output
    assert (git_repo / "notes" / "hello.txt").read_text() == "hello\nworld"
    main = model_server.log(main=True)
    assert len(main) == 3  # write, commit, final text
    key_in = {"claude": "x-api-key", "codex": "authorization: bearer", "gemini": "x-goog-api-key"}[cli]
    assert all(r.key_in == [key_in] for r in model_server.log() if r.method == "POST")
    turns = len(main)
    if cli == "claude":
        result = json_lines(ran.output)[-1]
        assert result["type"] == "result" and not result["is_error"] and result["result"] == "hello committed"
        assert result["usage"]["input_tokens"] == turns * INPUT_TOKENS
        assert result["usage"]["output_tokens"] == turns * OUTPUT_TOKENS
    elif cli == "codex":
        assert "hello committed" in ran.output
        assert f"tokens used\n{turns * (INPUT_TOKENS + OUTPUT_TOKENS):,}" in ran.output
    else:  # gemini's stats count its router request too
        result = json_lines(ran.output)[-1]
        assert result["type"] == "result" and result["status"] == "success", ran.output
        requests = len(model_server.log(api="gemini"))
        assert result["stats"]["input_tokens"] == requests * INPUT_TOKENS
        assert result["stats"]["output_tokens"] == requests * OUTPUT_TOKENS


def test_codex_exec_json_reports_usage_in_turn_completed(cli_paths, model_server, home, git_repo):
    ran = run("codex", model_server, home, git_repo, json_events=True)
    assert ran.returncode == 0, ran.output
    events = json_lines(ran.output)
    assert [e["item"]["type"] for e in events if e["type"] == "item.completed"][-1] == "agent_message"
    done = [e for e in events if e["type"] == "turn.completed"]
    assert done[-1]["usage"]["input_tokens"] == 3 * INPUT_TOKENS
    assert done[-1]["usage"]["output_tokens"] == 3 * OUTPUT_TOKENS


def test_aider_writes_the_file_and_commits_it(cli_paths, model_server, home, git_repo):
    ran = run("aider", model_server, home, git_repo)
    assert ran.returncode == 0, ran.output
    assert commits(git_repo)[0] == COMMIT_MESSAGE, ran.output
    assert (git_repo / "notes" / "hello.txt").read_text() == "hello\nworld\n"  # whole-file edits end in a newline
    assert [r.main for r in model_server.log()] == [True, False]  # the edit, then the commit message
    assert all(r.key_in == ["authorization: bearer"] for r in model_server.log())
    assert "Applied edit to notes/hello.txt" in ran.output


@pytest.mark.parametrize("name", [*TOOL_CLIS, "aider"])
def test_a_bad_key_makes_the_cli_fail(name, cli_paths, model_server, home, git_repo):
    ran = run(name, model_server, home, git_repo, api_key="wrong-key", max_retries=0)
    assert commits(git_repo) == ["initial commit"]
    assert model_server.log(), "the CLI never called the server"
    assert all(r.status in (400, 401) for r in model_server.log() if r.method == "POST")
    if name == "claude":
        assert ran.returncode == 1
        result = json_lines(ran.output)[-1]
        assert result["is_error"] and result["api_error_status"] == 401, ran.output
        assert "Invalid API key" in result["result"]
    elif name == "codex":
        assert ran.returncode == 1
        assert "unexpected status 401 Unauthorized: Incorrect API key provided" in ran.output
    elif name == "gemini":
        assert ran.returncode not in (0, None)
        result = json_lines(ran.output)[-1]
        assert result["type"] == "result" and result["status"] == "error"
        assert "API key not valid" in result["error"]["message"]
    else:  # aider prints the error and exits 0 all the same
        assert ran.returncode == 0
        assert "litellm.AuthenticationError" in ran.output
        assert "The API provider is not able to authenticate you" in ran.output


@pytest.mark.parametrize("name", TOOL_CLIS)
def test_a_rate_limit_is_reported(name, cli_paths, model_server, home, git_repo):
    model_server.rate_limited_until = time.time() + 3600
    ran = run(name, model_server, home, git_repo, max_retries=0)
    assert ran.returncode not in (0, None), ran.output
    assert commits(git_repo) == ["initial commit"]
    assert [r.status for r in model_server.log(main=True)] == [429]
    if name == "claude":
        result = json_lines(ran.output)[-1]
        assert result["is_error"] and result["api_error_status"] == 429
        assert result["result"].startswith("API Error: Request rejected (429)")
    elif name == "codex":
        assert "exceeded retry limit, last status: 429 Too Many Requests" in ran.output
    else:
        result = json_lines(ran.output)[-1]
        assert result["status"] == "error" and "Resource has been exhausted" in result["error"]["message"]


@pytest.mark.parametrize("name", [*TOOL_CLIS, "aider"])
def test_a_short_rate_limit_is_reported_then_waited_out(name, cli_paths, model_server, home, git_repo):
    """With their default retries each CLI waits out a 429 (retry-after: 1) and finishes.
    Aider's OpenAI client retries twice by itself before Aider sees (and prints) the error."""
    limited = model_server.rate_limit_requests = 3 if name == "aider" else 1
    ran = run(name, model_server, home, git_repo)
    assert ran.returncode == 0, ran.output
    statuses = [r.status for r in model_server.log(main=True)]
    assert statuses == [429] * limited + [200] * (len(statuses) - limited), statuses
    assert len(commits(git_repo)) == 2, ran.output
    reported = {
        "claude": '"subtype":"api_retry"',
        "codex": "Reconnecting... 1/5",
        "gemini": "Attempt 1 failed: Resource has been exhausted",
        "aider": "litellm.RateLimitError",
    }[name]
    assert reported in ran.output


def test_a_script_uses_what_its_last_tool_call_printed():
    from model_server.script import filled

    printed = "hive: question 1 is with your human\nSQLite\n"
    assert filled("printf %s {result:(?m)^(Postgres|SQLite)$}", printed) == "printf %s SQLite"
    assert filled("echo {result:Postgres}", printed) == "echo <no match in the last tool result>"
