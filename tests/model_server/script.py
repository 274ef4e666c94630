"""What the scripted "model" does, read from the conversation it is sent.

Directives are lines of the task text (leading whitespace and a markdown list bullet are
ignored):

    model> run: <shell command>          one shell tool call
    model> write: <path> :: <content>    a shell call writing <content> (``\\n`` = newline)
    model> say: <text>                   the final answer (default "done")

A reviewer's brief (Hive's `<!-- hive:review plan:ID round R -->`, engine/review.py) holds the task's
text, the author's `model>` directives with it: there the model follows `review>` directives
instead, and `review@R>` ones of its round R (`review@1> run: hive changes --reason "..."`).

In a run or write, `{result:REGEX}` stands for the first match of REGEX (its first group, if it has
one) in the last tool result the model was sent: how a script uses what a tool call told it (an answer `hive ask`
printed), which it cannot know otherwise.

Every request is answered statelessly: the turn is the number of tool results the request
already holds; turn i makes the i-th run/write call, and once they are all made the model
gives its final text.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

DIRECTIVE = re.compile(r"^(model|review(?:@\d+)?)>\s*(run|write|say):\s?(.*)$")
REVIEW_ROUND = re.compile(r"<!-- hive:review \S+ round (\d+) ")
BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+")
HIVE_PATH = re.compile(r"if `hive` is not found, it is `([^`]+)`")
ABS_PATH = re.compile(r"(?<![\w/.~])(/[^\s`'\"<>]+)")
RESULT = re.compile(r"\{result:([^}]*)\}")
DEFAULT_SAY = "done"

# Shell tools by the name each CLI gives its own, tried in this order.
SHELL_TOOLS = ("Bash", "exec_command", "run_shell_command", "shell", "local_shell", "bash")


@dataclass(frozen=True)
class Step:
    kind: str  # "run" or "write"
    command: str = ""  # for run
    path: str = ""  # for write
    content: str = ""  # for write, with real newlines

    def shell(self) -> str:
        if self.kind == "run":
            return self.command
        parent = os.path.dirname(self.path)
        mkdir = f"mkdir -p {shlex.quote(parent)} && " if parent else ""
        return f"{mkdir}printf '%s' {shlex.quote(self.content)} > {shlex.quote(self.path)}"


@dataclass
class Script:
    steps: list[Step] = field(default_factory=list)
    say: str = DEFAULT_SAY
    found: bool = False  # any directive at all

    @property
    def writes(self) -> list[Step]:
        return [s for s in self.steps if s.kind == "write"]


def parse(text: str, hive: str | None = None) -> Script:
    """The directives of `text`. A `run` whose command starts with the word `hive` gets that
    word replaced by the `hive` argument (the absolute path the prompt names), when given."""
    script = Script()
    reviewing = REVIEW_ROUND.search(text)
    mine = {"review", f"review@{reviewing.group(1)}"} if reviewing else {"model"}
    for raw in text.splitlines():
        line = BULLET.sub("", raw.strip(), count=1)
        m = DIRECTIVE.match(line)
        if not m or m.group(1) not in mine:
            continue
        script.found = True
        kind, rest = m.group(2), m.group(3).strip()
        if kind == "say":
            script.say = rest
        elif kind == "run":
            if hive and (rest == "hive" or rest.startswith("hive ")):
                rest = shlex.quote(hive) + rest[len("hive") :]
            script.steps.append(Step("run", command=rest))
        else:
            path, sep, content = rest.partition(" :: ")
            if not sep:
                path, content = rest.removesuffix(" ::"), ""
            script.steps.append(Step("write", path=path.strip(), content=content.replace("\\n", "\n")))
    return script


@dataclass
class Conversation:
    """What every API's request comes down to, for the script."""

    texts: list[str]  # system and user text, in order (no tool results, no model turns)
    user_texts: list[str]  # the user's text only
    tool_results: int  # tool results already in the request: the turn number
    tools: dict[str, dict[str, Any]]  # name -> JSON schema of its parameters
    last_result: str = ""  # the text of the last tool result in the request

    def hive_path(self) -> str | None:
        for text in self.texts:
            if m := HIVE_PATH.search(text):
                return m.group(1)
        return None

    def script(self) -> Script:
        """The first text with directives; else the first file named by an absolute path
        in the user's text ("Read /abs/path now:") that has them."""
        hive = self.hive_path()
        for text in self.texts:
            script = parse(text, hive)
            if script.found:
                return script
        for text in self.user_texts:
            for m in ABS_PATH.finditer(text):
                path = m.group(1).rstrip(".,:;)]}")
                try:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        script = parse(f.read(), hive)
                except OSError:
                    continue
                if script.found:
                    return script
        return Script()

    def text(self) -> str:
        return "\n".join(self.texts)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    text: str = ""
    call: ToolCall | None = None


def shell_tool(tools: dict[str, dict[str, Any]]) -> str | None:
    for name in SHELL_TOOLS:
        if name in tools:
            return name
    for name in tools:
        if any(word in name.lower() for word in ("shell", "bash", "exec")):
            return name
    return None


def shell_arguments(schema: dict[str, Any], command: str) -> dict[str, Any]:
    """Arguments for a shell tool with this parameter schema: `cmd` or `command` (a
    string, or an argv list for the array kind), plus a description where it takes one."""
    props = schema.get("properties") or {}
    args: dict[str, Any]
    if "cmd" in props:
        args = {"cmd": command}
    elif "command" in props and (props["command"] or {}).get("type") == "array":
        args = {"command": ["bash", "-lc", command]}
    else:
        args = {"command": command}
    if "description" in props:
        args["description"] = "scripted step"
    return args


def next_turn(conv: Conversation) -> Turn:
    """The main conversation's next model turn."""
    script = conv.script()
    if conv.tool_results < len(script.steps):
        step = script.steps[conv.tool_results]
        name = shell_tool(conv.tools)
        if name is None:
            return Turn(text=f"(scripted model: no shell tool offered to run {step.shell()!r})")
        return Turn(call=ToolCall(name, shell_arguments(conv.tools[name], filled(step.shell(), conv.last_result))))
    return Turn(text=script.say)


def filled(command: str, last_result: str) -> str:
    """`command` with each `{result:REGEX}` replaced by REGEX's first match in the last tool result."""

    def match(m: re.Match[str]) -> str:
        found = re.search(m.group(1), last_result)
        if not found:
            return "<no match in the last tool result>"
        return found.group(1) if found.re.groups else found.group(0)

    return RESULT.sub(match, command)


def whole_edit_reply(conv: Conversation) -> str:
    """Aider's `whole` edit format: each written file as its path on a line, then a fenced
    block with its full content; then the final text."""
    script = conv.script()
    parts = []
    for step in script.writes:
        fence = "````" if "```" in step.content else "```"
        body = step.content if step.content.endswith("\n") or not step.content else step.content + "\n"
        parts.append(f"{step.path}\n{fence}\n{body}{fence}\n")
    parts.append(script.say)
    return "\n".join(parts)
