"""Anthropic Messages API (`POST /v1/messages`, as Claude Code calls it) for the scripted server.

Claude Code streams every request (`"stream": true`: server-sent events message_start →
content_block_start/delta/stop… → message_delta → message_stop); non-streaming requests get the
same message as one JSON body. Agent-loop requests offer the `Bash` tool and are answered with
the plan's next step (text + a `tool_use` of Bash); side requests (no shell tool: quota probe,
session title, …) get a short plain text. `POST /v1/messages/count_tokens` is answered with a
fixed count (it is not a model response and carries no usage). Usage figures: `input_tokens` in
message_start, the final cumulative `output_tokens` in message_delta (as the real API does).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from scripted_llm._core import Script, shell_arguments, shell_tool


def _tool_results(messages: list[dict[str, Any]]) -> int:
    n = 0
    for msg in messages:
        content = msg.get("content")
        if msg.get("role") == "user" and isinstance(content, list):
            n += sum(1 for block in content
                     if isinstance(block, dict) and block.get("type") == "tool_result")
    return n


def _message(script: Script, body: dict[str, Any]) -> dict[str, Any]:
    """The full assistant message (content blocks, stop reason, usage) for this request."""
    tools = [(t.get("name", ""), t.get("input_schema") or {}) for t in body.get("tools") or []
             if isinstance(t, dict)]
    shell = shell_tool(tools)
    content: list[dict[str, Any]]
    if shell is None:
        sent = script.usage("/v1/messages", main=False, step=None)
        content, stop = [{"type": "text", "text": "Scripted session"}], "end_turn"
    else:
        n = _tool_results(body.get("messages") or [])
        step = script.step(n)
        sent = script.usage("/v1/messages", main=True, step=n)
        content = [{"type": "text", "text": step.text}]
        stop = "end_turn"
        if step.command is not None:
            name, schema = shell
            content.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}",
                            "name": name, "input": shell_arguments(schema, step.command)})
            stop = "tool_use"
    return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": body.get("model", "scripted-model"), "content": content,
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": sent.input_tokens, "output_tokens": sent.output_tokens,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _stream(message: dict[str, Any]) -> Iterator[str]:
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None,
                 usage=dict(usage, output_tokens=0))
    yield _sse("message_start", {"type": "message_start", "message": start})
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield _sse("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": {"type": "text", "text": ""}})
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            yield _sse("content_block_start", {
                "type": "content_block_start", "index": i,
                "content_block": dict(block, input={})})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield _sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                           "delta": delta})
        yield _sse("content_block_stop", {"type": "content_block_stop", "index": i})
    yield _sse("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": message["stop_reason"],
                                           "stop_sequence": None},
                                 "usage": {"output_tokens": usage["output_tokens"]}})
    yield _sse("message_stop", {"type": "message_stop"})


def add_routes(app: FastAPI, script: Script) -> None:
    @app.post("/v1/messages")
    async def messages(request: Request) -> Response:
        body = await request.json()
        script.record_request("/v1/messages", body, dict(request.headers))
        message = _message(script, body)
        if body.get("stream"):
            return StreamingResponse(_stream(message), media_type="text/event-stream",
                                     headers={"request-id": f"req_{uuid.uuid4().hex[:24]}"})
        return JSONResponse(message)

    @app.post("/v1/messages/count_tokens")
    async def count_tokens(request: Request) -> Response:
        body = await request.json()
        script.record_request("/v1/messages/count_tokens", body, dict(request.headers))
        return JSONResponse({"input_tokens": 1000})
