"""OpenAI Responses API (`POST /v1/responses`, as the Codex CLI calls it) for the scripted server.

Codex always streams (`"stream": true`, server-sent events) and sends `store: false`, so every
request carries the whole conversation in `input` (our earlier `function_call` items and its
`function_call_output` items). The answer is: response.created → for each output item
response.output_item.added, its deltas (output_text / function_call_arguments), …done →
response.output_item.done → response.completed, whose `response.usage` carries the figures
(`input_tokens`, `output_tokens`, with their `*_details`), as the real API does.

Agent-loop requests offer a shell tool (Codex: `exec_command {cmd}` for models without a
bundled harness, such as the scripted model) and are answered with the plan's next step: a text
message plus a `function_call` of that tool. A command that outlives exec_command's yield time
(10 s: the submission, while the grader evaluates) comes back as "Process running with session
ID n"; that result does not count as a step, and the answer polls the session with
`write_stdin` (empty input, long wait) until the command ends. Requests offering no shell tool (side requests:
titles, summaries, compaction) get a short plain text. Tools are found in `tools` (including
`namespace` groups) and in `additional_tools` input items (newer Codex models' layout).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from scripted_llm._core import Script, shell_arguments, shell_tool

ROUTE = "/v1/responses"
RUNNING = re.compile(r"Process running with session ID (\d+)")
"""How `exec_command` answers when the command outlives its `yield_time_ms` (10 s default)."""


def _flatten_tools(tools: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    out: list[tuple[str, dict[str, Any]]] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            out.extend(_flatten_tools(tool.get("tools") or []))
        elif tool.get("type") == "function" and tool.get("name"):
            out.append((tool["name"], tool.get("parameters") or {}))
    return out


def offered_tools(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, JSON schema) of every function tool the request offers."""
    tools = list(body.get("tools") or [])
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            tools.extend(item.get("tools") or [])
    return _flatten_tools(tools)


def _outputs(body: dict[str, Any]) -> list[str]:
    items = body.get("input")
    if not isinstance(items, list):
        return []
    return [json.dumps(item.get("output")) for item in items if isinstance(item, dict)
            and str(item.get("type", "")).endswith("_call_output")]


def tool_results(body: dict[str, Any]) -> int:
    """Number of finished tool results (`*_call_output` items) in the conversation; a command
    still running in the background (its session polled next) does not count."""
    return sum(1 for out in _outputs(body) if not RUNNING.search(out))


def running_session(body: dict[str, Any]) -> int | None:
    """The session id when the latest tool result says its command is still running."""
    outputs = _outputs(body)
    found = RUNNING.search(outputs[-1]) if outputs else None
    return int(found.group(1)) if found else None


def _response(script: Script, body: dict[str, Any]) -> dict[str, Any]:
    """The complete response object (output items and usage) for this request."""
    tools = offered_tools(body)
    shell = shell_tool(tools)
    session = running_session(body)
    call: tuple[str, dict[str, Any]] | None = None
    if shell is None:
        sent = script.usage(ROUTE, main=False, step=None)
        text = "Scripted session"
    elif session is not None and any(name == "write_stdin" for name, _ in tools):
        # the last command is still running: wait for it, as a model would
        sent = script.usage(ROUTE, main=True, step=None)
        text = "Waiting for it to finish."
        call = ("write_stdin", {"session_id": session, "chars": "", "yield_time_ms": 300000})
    else:
        n = tool_results(body)
        step = script.step(n)
        sent = script.usage(ROUTE, main=True, step=n)
        text = step.text
        if step.command is not None:
            call = (shell[0], shell_arguments(shell[1], step.command))
    output: list[dict[str, Any]] = [
        {"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": "assistant",
         "status": "completed",
         "content": [{"type": "output_text", "text": text, "annotations": []}]}]
    if call is not None:
        output.append({"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}",
                       "call_id": f"call_{uuid.uuid4().hex[:24]}", "name": call[0],
                       "arguments": json.dumps(call[1]), "status": "completed"})
    return {"id": f"resp_{uuid.uuid4().hex[:24]}", "object": "response", "status": "completed",
            "model": body.get("model", "scripted-model"), "output": output,
            "usage": {"input_tokens": sent.input_tokens,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": sent.output_tokens,
                      "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": sent.input_tokens + sent.output_tokens}}


def _sse(data: dict[str, Any]) -> str:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"


def _stream(response: dict[str, Any]) -> Iterator[str]:
    seq = iter(range(1_000_000))
    pending = dict(response, status="in_progress", output=[], usage=None)
    yield _sse({"type": "response.created", "sequence_number": next(seq), "response": pending})
    yield _sse({"type": "response.in_progress", "sequence_number": next(seq),
                "response": pending})
    for i, item in enumerate(response["output"]):
        if item["type"] == "message":
            yield _sse({"type": "response.output_item.added", "sequence_number": next(seq),
                        "output_index": i, "item": dict(item, status="in_progress",
                                                         content=[])})
            text = item["content"][0]["text"]
            yield _sse({"type": "response.output_text.delta", "sequence_number": next(seq),
                        "item_id": item["id"], "output_index": i, "content_index": 0,
                        "delta": text})
            yield _sse({"type": "response.output_text.done", "sequence_number": next(seq),
                        "item_id": item["id"], "output_index": i, "content_index": 0,
                        "text": text})
        else:
            yield _sse({"type": "response.output_item.added", "sequence_number": next(seq),
                        "output_index": i, "item": dict(item, status="in_progress",
                                                         arguments="")})
            yield _sse({"type": "response.function_call_arguments.delta",
                        "sequence_number": next(seq), "item_id": item["id"],
                        "output_index": i, "delta": item["arguments"]})
            yield _sse({"type": "response.function_call_arguments.done",
                        "sequence_number": next(seq), "item_id": item["id"],
                        "output_index": i, "arguments": item["arguments"]})
        yield _sse({"type": "response.output_item.done", "sequence_number": next(seq),
                    "output_index": i, "item": item})
    yield _sse({"type": "response.completed", "sequence_number": next(seq),
                "response": response})


def add_routes(app: FastAPI, script: Script) -> None:
    @app.post("/v1/responses")
    async def responses(request: Request) -> Response:
        body = await request.json()
        script.record_request(ROUTE, body, dict(request.headers))
        response = _response(script, body)
        if body.get("stream"):
            return StreamingResponse(_stream(response), media_type="text/event-stream")
        return JSONResponse(response)

    @app.get("/v1/models")
    async def models(request: Request) -> Response:
        script.record_request("/v1/models", None, dict(request.headers))
        return JSONResponse({"object": "list", "data": [
            {"id": "scripted-model", "object": "model", "created": 0, "owned_by": "a2rl"}]})
