"""The four wire formats: each turns a request body into a `Conversation`, and a model turn
or an error into the body (JSON, or server-sent events) its real API would send."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .script import SHELL_TOOLS, Conversation, Turn, next_turn, whole_edit_reply

INPUT_TOKENS = 1000
OUTPUT_TOKENS = 100

ROUTER_REPLY = '{"complexity_reasoning":"simple","reasoning":"simple","complexity_score":1}'
NEXT_SPEAKER_REPLY = '{"reasoning":"the model has finished","next_speaker":"user"}'
COMMIT_MESSAGE = "Apply the scripted changes"
TITLE = "Scripted task"

CUSTOM = "x-freeform-tool"  # marks a tool without JSON parameters in Conversation.tools
CODE_MODE_TOOL = "exec"

Event = tuple[str | None, Any]  # (SSE event name or None, data: a dict, or a str sent as is)


@dataclass
class Response:
    status: int = 200
    json: Any = None
    events: list[Event] | None = None  # server-sent events instead of a JSON body
    headers: dict[str, str] = field(default_factory=dict)


def _id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def _texts(content: Any) -> list[str]:
    """Text of a message's content: a string, or a list of parts with `text`."""
    if isinstance(content, str):
        return [content]
    out = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("type") != "tool_result":
                out.append(part["text"])
            elif isinstance(part, str):
                out.append(part)
    return out


def _result_text(output: Any) -> str:
    """A tool result's text, whatever shape its API gives it (a string, text parts, JSON)."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        nested = [_result_text(p.get("content")) for p in output if isinstance(p, dict) and "content" in p]
        return "\n".join(_texts(output) + nested)
    if isinstance(output, dict):  # Gemini's {"output": "..."}: its strings, newlines kept
        return "\n".join(_result_text(v) for v in output.values() if isinstance(v, (str, list, dict)))
    return json.dumps(output) if output is not None else ""


class Api:
    name = ""

    def conversation(self, body: dict[str, Any]) -> Conversation:
        raise NotImplementedError

    def is_main(self, body: dict[str, Any], conv: Conversation) -> bool:
        return bool(conv.tools)

    def answer(self, body: dict[str, Any], conv: Conversation, main: bool, stream: bool) -> Response:
        raise NotImplementedError

    def error(self, kind: str, message: str | None = None, retry_after: int | None = None) -> Response:
        """kind: auth, rate_limit, overloaded, not_found (Gemini also auth-401); retry_after:
        the seconds a 429 announces (its retry-after header is set by the server)."""
        raise NotImplementedError


# --- Anthropic Messages ------------------------------------------------------------------


class Anthropic(Api):
    name = "anthropic"

    def conversation(self, body: dict[str, Any]) -> Conversation:
        texts = _texts(body.get("system"))
        user: list[str] = []
        results, last = 0, ""
        for msg in body.get("messages") or []:
            if msg.get("role") != "user":
                continue
            content = msg.get("content")
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        results, last = results + 1, _result_text(block.get("content"))
            user += _texts(content)
        tools = {t["name"]: t.get("input_schema") or {} for t in body.get("tools") or [] if "name" in t}
        return Conversation(texts + user, user, results, tools, last)

    def answer(self, body: dict[str, Any], conv: Conversation, main: bool, stream: bool) -> Response:
        turn = next_turn(conv) if main else Turn(text=TITLE)
        model = body.get("model", "claude")
        blocks: list[dict[str, Any]] = []
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        if turn.call:
            blocks.append(
                {"type": "tool_use", "id": _id("toolu_"), "name": turn.call.name, "input": turn.call.arguments}
            )
        stop = "tool_use" if turn.call else "end_turn"
        usage = {
            "input_tokens": INPUT_TOKENS,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": OUTPUT_TOKENS,
        }
        message = {"id": _id("msg_"), "type": "message", "role": "assistant", "model": model}
        if not stream:
            return Response(
                json={**message, "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
            )
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 0},
        }
        events: list[Event] = [("message_start", {"type": "message_start", "message": start})]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                events.append(
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                    )
                )
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                empty = {**block, "input": {}}
                events.append(
                    ("content_block_start", {"type": "content_block_start", "index": i, "content_block": empty})
                )
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        events.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": OUTPUT_TOKENS},
                },
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return Response(events=events)

    def error(self, kind: str, message: str | None = None, retry_after: int | None = None) -> Response:
        status, type_, default = {
            "auth": (401, "authentication_error", "invalid x-api-key"),
            "rate_limit": (429, "rate_limit_error", "Number of requests has exceeded your rate limit"),
            "overloaded": (529, "overloaded_error", "Overloaded"),
            "not_found": (404, "not_found_error", "Not found"),
        }[kind]
        body = {"type": "error", "error": {"type": type_, "message": message or default}, "request_id": _id("req_")}
        return Response(status=status, json=body)


# --- OpenAI (Responses and Chat Completions) ------------------------------------------------


def _openai_error(kind: str, message: str | None = None) -> Response:
    status, type_, code, default = {
        "auth": (401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided"),
        "rate_limit": (429, "requests", "rate_limit_exceeded", "Rate limit reached for requests"),
        "overloaded": (503, "server_error", "server_is_overloaded", "The server is overloaded, please try again later"),
        "not_found": (404, "invalid_request_error", "not_found", "Not found"),
    }[kind]
    return Response(
        status=status, json={"error": {"message": message or default, "type": type_, "param": None, "code": code}}
    )


class Responses(Api):
    name = "responses"

    def conversation(self, body: dict[str, Any]) -> Conversation:
        texts = _texts(body.get("instructions"))
        user: list[str] = []
        results, last = 0, ""
        tools_in: list[dict[str, Any]] = list(body.get("tools") or [])
        items = body.get("input")
        for item in [{"role": "user", "content": items}] if isinstance(items, str) else items or []:
            if not isinstance(item, dict):
                continue
            type_ = item.get("type", "message")
            if type_.endswith("_output"):
                results, last = results + 1, _result_text(item.get("output"))
            elif type_ == "additional_tools":  # Codex's default model: tools among the input items
                tools_in += [t for t in item.get("tools") or [] if isinstance(t, dict)]
            elif type_ == "message" and item.get("role") in ("user", "developer", "system"):
                got = _texts(item.get("content"))
                texts += got
                if item.get("role") == "user":
                    user += got
        tools: dict[str, dict[str, Any]] = {}
        for tool in tools_in:
            for t in tool.get("tools") or [] if tool.get("type") == "namespace" else [tool]:
                if "name" in t:
                    # a freeform ("custom") tool has no JSON parameters: mark it
                    tools[t["name"]] = t.get("parameters") or ({CUSTOM: True} if t.get("type") == "custom" else {})
        if not any(name in tools for name in SHELL_TOOLS) and CODE_MODE_TOOL in tools:
            tools = {CODE_MODE_TOOL: tools[CODE_MODE_TOOL]}  # the shell is reached through it
        return Conversation(texts, user, results, tools, last)

    def is_main(self, body: dict[str, Any], conv: Conversation) -> bool:
        return True

    @staticmethod
    def code_mode_source(command: str) -> str:
        """JavaScript for Codex's `exec` tool ("code mode", its default model's only way to
        the shell): run the command through the nested exec_command tool, print the result."""
        return (
            f"const r = await tools.exec_command({{cmd: {json.dumps(command)}}});\n"
            'text(typeof r === "string" ? r : JSON.stringify(r));\n'
        )

    def answer(self, body: dict[str, Any], conv: Conversation, main: bool, stream: bool) -> Response:
        turn = next_turn(conv) if main else Turn(text=TITLE)
        item: dict[str, Any]
        if turn.call and conv.tools.get(turn.call.name, {}).get(CUSTOM):
            command = turn.call.arguments.get("command") or turn.call.arguments.get("cmd") or ""
            item = {
                "type": "custom_tool_call",
                "id": _id("ctc_"),
                "call_id": _id("call_"),
                "name": turn.call.name,
                "input": self.code_mode_source(str(command)),
                "status": "completed",
            }
        elif turn.call:
            item = {
                "type": "function_call",
                "id": _id("fc_"),
                "call_id": _id("call_"),
                "name": turn.call.name,
                "arguments": json.dumps(turn.call.arguments),
                "status": "completed",
            }
        else:
            content = {"type": "output_text", "text": turn.text, "annotations": []}
            item = {
                "type": "message",
                "id": _id("msg_"),
                "role": "assistant",
                "status": "completed",
                "content": [content],
            }
        usage = {
            "input_tokens": INPUT_TOKENS,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": OUTPUT_TOKENS,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
        }
        resp: dict[str, Any] = {
            "id": _id("resp_"),
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model"),
            "status": "in_progress",
            "output": [],
        }
        if not stream:
            return Response(json={**resp, "status": "completed", "output": [item], "usage": usage})
        events: list[Event] = [("response.created", {"type": "response.created", "response": resp})]
        added = {**item, "status": "in_progress"}
        if item["type"] == "message":
            added["content"] = []
        events.append(
            ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": added})
        )
        if item["type"] == "message":
            events.append(
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "delta": turn.text,
                    },
                )
            )
        events.append(
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item})
        )
        done = {**resp, "status": "completed", "output": [item], "usage": usage}
        events.append(("response.completed", {"type": "response.completed", "response": done}))
        return Response(events=events)

    def error(self, kind: str, message: str | None = None, retry_after: int | None = None) -> Response:
        return _openai_error(kind, message)


class Chat(Api):
    name = "chat"

    def conversation(self, body: dict[str, Any]) -> Conversation:
        texts: list[str] = []
        user: list[str] = []
        results, last = 0, ""
        for msg in body.get("messages") or []:
            role = msg.get("role")
            if role == "tool":
                results, last = results + 1, _result_text(msg.get("content"))
            elif role in ("system", "developer", "user"):
                got = _texts(msg.get("content"))
                texts += got
                if role == "user":
                    user += got
        tools = {
            t["function"]["name"]: t["function"].get("parameters") or {}
            for t in body.get("tools") or []
            if isinstance(t.get("function"), dict) and "name" in t["function"]
        }
        return Conversation(texts, user, results, tools, last)

    @staticmethod
    def _system(body: dict[str, Any]) -> str:
        return "\n".join(
            t for m in body.get("messages") or [] if m.get("role") == "system" for t in _texts(m.get("content"))
        )

    def is_main(self, body: dict[str, Any], conv: Conversation) -> bool:
        system = self._system(body).lower()
        return bool(conv.tools) or not ("commit message" in system or "summariz" in system)

    def answer(self, body: dict[str, Any], conv: Conversation, main: bool, stream: bool) -> Response:
        if not main:
            turn = Turn(text=COMMIT_MESSAGE if "commit message" in self._system(body).lower() else TITLE)
        elif conv.tools:
            turn = next_turn(conv)
        else:  # Aider: no tools, file edits as whole files in the text
            turn = Turn(text=whole_edit_reply(conv))
        created = int(time.time())
        base = {"id": _id("chatcmpl-"), "created": created, "model": body.get("model")}
        usage = {
            "prompt_tokens": INPUT_TOKENS,
            "completion_tokens": OUTPUT_TOKENS,
            "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
        }
        finish = "tool_calls" if turn.call else "stop"
        calls = []
        if turn.call:
            fn = {"name": turn.call.name, "arguments": json.dumps(turn.call.arguments)}
            calls = [{"index": 0, "id": _id("call_"), "type": "function", "function": fn}]
        if not stream:
            message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if calls:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return Response(json={**base, "object": "chat.completion", "choices": [choice], "usage": usage})
        chunk = {**base, "object": "chat.completion.chunk"}
        delta: dict[str, Any] = {"role": "assistant", "content": turn.text or ""}
        if calls:
            delta["tool_calls"] = calls
        events: list[Event] = [
            (None, {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
            (None, {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
            (None, {**chunk, "choices": [], "usage": usage}),
            (None, "[DONE]"),
        ]
        return Response(events=events)

    def error(self, kind: str, message: str | None = None, retry_after: int | None = None) -> Response:
        return _openai_error(kind, message)


# --- Gemini ---------------------------------------------------------------------------------


# Values for side questions that ask for JSON: the router's complexity, the next speaker.
SCHEMA_ANSWERS: dict[str, Any] = {"complexity_score": 1, "next_speaker": "user"}


def fill_schema(schema: dict[str, Any], key: str = "") -> Any:
    """A small value of this JSON schema (Gemini spells its types in capitals)."""
    if key in SCHEMA_ANSWERS:
        return SCHEMA_ANSWERS[key]
    if schema.get("enum"):
        return schema["enum"][0]
    type_ = str(schema.get("type", "object")).lower()
    if type_ == "object":
        props = schema.get("properties") or {}
        return {k: fill_schema(v, k) for k, v in props.items()}
    if type_ == "array":
        return []
    if type_ in ("integer", "number"):
        return 1
    if type_ == "boolean":
        return False
    return "simple"


class Gemini(Api):
    name = "gemini"

    def conversation(self, body: dict[str, Any]) -> Conversation:
        system = body.get("systemInstruction") or body.get("system_instruction") or {}
        texts = _texts(system.get("parts") if isinstance(system, dict) else system)
        user: list[str] = []
        results, last = 0, ""
        for content in body.get("contents") or []:
            if content.get("role", "user") != "user":
                continue
            for part in content.get("parts") or []:
                if "functionResponse" in part:
                    results, last = results + 1, _result_text(part["functionResponse"].get("response"))
                elif isinstance(part.get("text"), str):
                    texts.append(part["text"])
                    user.append(part["text"])
        tools: dict[str, dict[str, Any]] = {}
        for tool in body.get("tools") or []:
            for decl in tool.get("functionDeclarations") or []:
                tools[decl["name"]] = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
        return Conversation(texts, user, results, tools, last)

    def answer(self, body: dict[str, Any], conv: Conversation, main: bool, stream: bool) -> Response:
        if main:
            turn = next_turn(conv)
        else:
            config = body.get("generationConfig") or {}
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            request = json.dumps(body)
            if isinstance(schema, dict):  # the router and other side questions want JSON of this shape
                turn = Turn(text=json.dumps(fill_schema(schema)))
            elif "complexity_score" in request:
                turn = Turn(text=ROUTER_REPLY)
            elif "next_speaker" in request:
                turn = Turn(text=NEXT_SPEAKER_REPLY)
            else:
                turn = Turn(text=TITLE)
        usage = {
            "promptTokenCount": INPUT_TOKENS,
            "candidatesTokenCount": OUTPUT_TOKENS,
            "totalTokenCount": INPUT_TOKENS + OUTPUT_TOKENS,
        }
        parts: list[dict[str, Any]] = []
        if turn.text:
            parts.append({"text": turn.text})
        if turn.call:
            parts.append({"functionCall": {"name": turn.call.name, "args": turn.call.arguments}})
        model = body.get("model") or "gemini"
        full = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": _id(""),
        }
        if not stream:
            return Response(json=full)
        return Response(events=[(None, full)])

    def error(self, kind: str, message: str | None = None, retry_after: int | None = None) -> Response:
        code, status, default = {
            "auth": (400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key."),
            "auth-401": (401, "UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
            "rate_limit": (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
            "overloaded": (503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
            "not_found": (404, "NOT_FOUND", "Not found"),
        }[kind]
        error: dict[str, Any] = {"code": code, "message": message or default, "status": status}
        if kind == "auth":
            error["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ]
        elif kind == "rate_limit" and retry_after is not None:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after}s"}]
        return Response(status=code, json={"error": error})


API_BY_NAME: dict[str, Api] = {api.name: api for api in (Anthropic(), Responses(), Chat(), Gemini())}
