"""OpenAI Chat Completions (`POST /v1/chat/completions`) for the scripted server.

Used by the CLIs that speak the generic OpenAI-compatible protocol (OpenCode through the AI
SDK's `@ai-sdk/openai-compatible`, OpenHands through litellm). Agent-loop requests offer a
shell tool among `tools` (`{"type": "function", "function": {"name", "parameters"}}`) and are
answered with the plan's next step: the step's text as `content` plus one `tool_calls` entry for
the shell tool (`finish_reason: "tool_calls"`), or the final text (`"stop"`). The step is chosen
by the number of tool results (`role: "tool"` messages) already in the conversation. Side
requests (no shell tool offered: session titles, summaries) get a short plain text, or
what the Script's `side_reply` rule answers (a scripted judge).

Streaming (`"stream": true`) follows the real API: `data: <chat.completion.chunk>` events — the
role, the text, the tool call (id + name first, then the arguments), a chunk with the
`finish_reason` — then `data: [DONE]`. Usage: with `stream_options.include_usage` a last chunk
with `"choices": []` and `usage` (as OpenAI sends it); without it, `usage` rides on the
finish_reason chunk (as many compatible servers send it) so that every response reports its
figures. Non-streaming requests get one `chat.completion` body with `usage`. `GET /v1/models`
lists the requested model names plus `scripted-model`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from scripted_llm._core import Script, shell_arguments, shell_tool

ROUTE = "/v1/chat/completions"


def _tool_results(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")


def _tools(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for tool in body.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict):
            found.append((str(fn.get("name", "")), fn.get("parameters") or {}))
    return found


def _completion(script: Script, body: dict[str, Any]) -> dict[str, Any]:
    """The full (non-streaming) `chat.completion` object answering this request."""
    shell = shell_tool(_tools(body))
    message: dict[str, Any] = {"role": "assistant"}
    if shell is None:
        sent = script.usage(ROUTE, main=False, step=None)
        reply = script.side_reply(body) if script.side_reply else "Scripted session"
        message["content"], finish = reply, "stop"
    else:
        n = _tool_results(body.get("messages") or [])
        step = script.step(n)
        sent = script.usage(ROUTE, main=True, step=n)
        message["content"], finish = step.text, "stop"
        if step.command is not None:
            name, schema = shell
            message["tool_calls"] = [{
                "id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                "function": {"name": name,
                             "arguments": json.dumps(shell_arguments(schema, step.command))}}]
            finish = "tool_calls"
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion",
            "created": int(time.time()), "model": body.get("model", "scripted-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish,
                         "logprobs": None}],
            "usage": {"prompt_tokens": sent.input_tokens,
                      "completion_tokens": sent.output_tokens,
                      "total_tokens": sent.input_tokens + sent.output_tokens}}


def _stream(completion: dict[str, Any], include_usage: bool) -> Iterator[str]:
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    choice = completion["choices"][0]
    message = choice["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        data = dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish,
                                    "logprobs": None}], **extra)
        return f"data: {json.dumps(data)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    if message.get("content"):
        yield chunk({"content": message["content"]})
    for i, call in enumerate(message.get("tool_calls") or []):
        yield chunk({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                     "function": {"name": call["function"]["name"],
                                                  "arguments": ""}}]})
        yield chunk({"tool_calls": [{"index": i, "function": {
            "arguments": call["function"]["arguments"]}}]})
    if include_usage:
        yield chunk({}, choice["finish_reason"])
        yield f"data: {json.dumps(dict(base, choices=[], usage=completion['usage']))}\n\n"
    else:
        yield chunk({}, choice["finish_reason"], usage=completion["usage"])
    yield "data: [DONE]\n\n"


def add_routes(app: FastAPI, script: Script) -> None:
    @app.post(ROUTE)
    async def chat_completions(request: Request) -> Response:
        body = await request.json()
        script.record_request(ROUTE, body, dict(request.headers))
        completion = _completion(script, body)
        if body.get("stream"):
            options = body.get("stream_options") or {}
            return StreamingResponse(_stream(completion, bool(options.get("include_usage"))),
                                     media_type="text/event-stream")
        return JSONResponse(completion)

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        script.record_request("GET /v1/models", None, dict(request.headers))
        seen = {r["body"].get("model") for r in script.requests
                if r["route"] == ROUTE and isinstance(r["body"], dict)}
        names = sorted({"scripted-model"} | {m for m in seen if isinstance(m, str)})
        return JSONResponse({"object": "list", "data": [
            {"id": m, "object": "model", "created": 0, "owned_by": "a2rl"} for m in names]})
