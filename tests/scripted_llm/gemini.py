"""Gemini API (`/v1beta/models/{model}:…`, as Gemini CLI calls it) for the scripted server.

Gemini CLI streams the agent loop (`:streamGenerateContent?alt=sse`: server-sent `data:` chunks,
each a GenerateContentResponse) and uses `:generateContent` for its side requests (next-speaker
check, loop detection, compression, session summary…), usually with a JSON response schema.
Agent-loop requests declare the `run_shell_command` tool (functionDeclarations, with
`parametersJsonSchema` or OpenAPI-style `parameters` whose types are upper case) and are
answered with the plan's next step: a text part + a `functionCall` part. Requests without a
shell tool get a short text, or a minimal JSON object satisfying the requested schema.
`:countTokens` is answered with a fixed count (not a model response: no usage). Every model
response carries `usageMetadata` {promptTokenCount, candidatesTokenCount, totalTokenCount}
from `script.usage`; in a stream it is on the last chunk only.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from scripted_llm._core import Script, shell_arguments, shell_tool


def _normalise(schema: Any) -> Any:
    """OpenAPI-style Gemini schema (types 'OBJECT', 'STRING'…) → plain JSON schema."""
    if isinstance(schema, dict):
        out = {k: _normalise(v) for k, v in schema.items()}
        if isinstance(out.get("type"), str):
            out["type"] = out["type"].lower()
        return out
    if isinstance(schema, list):
        return [_normalise(v) for v in schema]
    return schema


def _tools(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    tools: list[tuple[str, dict[str, Any]]] = []
    for group in body.get("tools") or []:
        for decl in (group or {}).get("functionDeclarations") or []:
            schema = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
            tools.append((decl.get("name", ""), _normalise(schema)))
    return tools


def _function_responses(contents: list[dict[str, Any]]) -> int:
    return sum(1 for c in contents for p in c.get("parts") or []
               if isinstance(p, dict) and "functionResponse" in p)


def _example(schema: dict[str, Any]) -> Any:
    """A minimal value valid for `schema` (first enum value, first choice, required keys)."""
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if schema.get(key):
            return _example(schema[key][0])
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _example(props.get(k) or {}) for k in schema.get("required") or list(props)}
    return {"string": "Scripted answer.", "number": 0.0, "integer": 0, "boolean": False,
            "array": [], "null": None}.get(kind, "Scripted answer.")


def _response(script: Script, route: str, body: dict[str, Any]) -> dict[str, Any]:
    """The whole GenerateContentResponse for this request."""
    shell = shell_tool(_tools(body))
    parts: list[dict[str, Any]]
    if shell is None:
        sent = script.usage(route, main=False, step=None)
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if schema:
            text = json.dumps(_example(_normalise(schema)))
        elif config.get("responseMimeType") == "application/json":
            text = "{}"
        else:
            text = "Scripted summary."
        parts = [{"text": text}]
    else:
        n = _function_responses(body.get("contents") or [])
        step = script.step(n)
        sent = script.usage(route, main=True, step=n)
        parts = [{"text": step.text}]
        if step.command is not None:
            name, schema = shell
            parts.append({"functionCall": {"name": name,
                                           "args": shell_arguments(schema, step.command)}})
    return {"candidates": [{"content": {"role": "model", "parts": parts},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": sent.input_tokens,
                              "candidatesTokenCount": sent.output_tokens,
                              "totalTokenCount": sent.input_tokens + sent.output_tokens},
            "modelVersion": "scripted-model", "responseId": uuid.uuid4().hex[:20]}


def _stream(response: dict[str, Any]) -> Iterator[str]:
    """One chunk per part; finishReason and usageMetadata on the last one (as the API does)."""
    candidate = response["candidates"][0]
    parts = candidate["content"]["parts"]
    for i, part in enumerate(parts):
        chunk: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                                 "index": 0}],
                                 "modelVersion": response["modelVersion"],
                                 "responseId": response["responseId"]}
        if i == len(parts) - 1:
            chunk["candidates"][0]["finishReason"] = candidate["finishReason"]
            chunk["usageMetadata"] = response["usageMetadata"]
        yield f"data: {json.dumps(chunk)}\r\n\r\n"


def add_routes(app: FastAPI, script: Script) -> None:
    @app.post("/{version}/models/{call:path}")
    async def models(version: str, call: str, request: Request) -> Response:
        body = await request.json()
        model, _, method = call.rpartition(":")
        route = f"/{version}/models/{{model}}:{method}"
        script.record_request(route, body, dict(request.headers))
        if method == "countTokens":
            return JSONResponse({"totalTokens": 1000})
        if method not in ("generateContent", "streamGenerateContent"):
            return JSONResponse({"error": {"code": 404, "message": method}}, status_code=404)
        response = _response(script, route, body)
        if method == "streamGenerateContent":
            return StreamingResponse(_stream(response), media_type="text/event-stream")
        return JSONResponse(response)
