"""HTTP face of the grader: FastAPI on 127.0.0.1, a per-run bearer token, uvicorn in a thread."""

from __future__ import annotations

import errno
import logging
import secrets
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from a2rl._errors import A2RLError
from a2rl.grader._artifact import SubmissionRejected, clean_path_text
from a2rl.grader._grader import Grader
from a2rl.schema import (
    FinalDesignation,
    StatusResponse,
    SubmissionRecord,
    SubmitResponse,
)

log = logging.getLogger("a2rl.grader")

SUBMIT_HELP = ('POST /submit with header "Authorization: Bearer $A2RL_TOKEN" and JSON body '
               '{"model_path": "output/<model-dir>"}')


class SubmitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model_path: str
    """Folder under workspace/output/ (absolute, or relative to the workspace)."""
    wait: bool = True
    """False: return at once with status `pending`; poll GET /submissions/{id}."""
    final: bool = False
    """Hidden-final runs: designate this model as the final one once it is scored."""


def parse_submit(raw: bytes, model: type[SubmitRequest] = SubmitRequest) -> SubmitRequest:
    """A /submit body, parsed by hand: agents often POST JSON without a Content-Type header."""
    try:
        return model.model_validate_json(raw or b"null")
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e.get('loc', ()))) or 'body'}: "
                             f"{e.get('msg')}" for e in exc.errors())
        raise HTTPException(422, detail=f"malformed request ({problems}). "
                            f"Expected: {SUBMIT_HELP}") from None


class FinalRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    submission_id: str | None = None
    """A submission of this run (e.g. `s0003`) to be scored on the hidden test split."""
    model_path: str | None = None
    """Or the path it was submitted with."""


class PublicSubmission(BaseModel):
    """A ledger record as the agent may see it (no server-side paths)."""

    id: str
    status: str
    model_path: str
    score: float | None
    improvement: float | None
    cached: bool
    error: str | None
    ci_low: float | None = None
    ci_high: float | None = None
    significant: bool | None = None
    split: str = "all"
    note: str | None = None

    @classmethod
    def of(cls, r: SubmissionRecord) -> PublicSubmission:
        return cls(id=r.id, status=r.status, model_path=r.model_path, score=r.score,
                   improvement=r.improvement, cached=r.cached, error=r.error, ci_low=r.ci_low,
                   ci_high=r.ci_high, significant=r.significant, split=r.split,
                   note=r.note)


def visible_submission(grader: Grader, submission_id: str) -> SubmissionRecord:
    """A submission the agent may look up (not the hidden test split's); 404 otherwise."""
    rec = grader.ledger.get(submission_id)
    if rec is None or rec.split == "test":
        raise HTTPException(404, detail=f"no submission {clean_path_text(submission_id)!r}; "
                            "GET /submissions lists them")
    return rec


def create_app(grader: Grader, token: str, routers: Sequence[APIRouter] = (),
               submit_refusals: Mapping[str, str] | None = None) -> FastAPI:
    """The grader's API. `routers` (the run extensions' routes) are mounted behind the same
    token and matched before the grader's own routes, so one may replace /submit.
    `submit_refusals`: boolean /submit fields that a route of an extension not in this run
    reads, each with the reply (422) to a true value."""
    app = FastAPI(title="a2rl grader", docs_url=None, redoc_url=None, openapi_url=None)
    bearer = HTTPBearer(auto_error=False)
    refusals = dict(submit_refusals or {})
    request_model: type[SubmitRequest] = create_model(  # type: ignore[call-overload]
        "SubmitRequest", __base__=SubmitRequest,
        **{name: (bool, False) for name in refusals}) if refusals else SubmitRequest

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Never a traceback or a host path in a reply; the operator finds it in grader.log.
        log.error("unexpected error on %s %s", request.method, request.url.path,
                  exc_info=(type(exc), exc, exc.__traceback__))
        return JSONResponse(status_code=500,
                            content={"detail": f"grader error ({type(exc).__name__}); see "
                                     "GET /submissions for what was recorded"})

    def authorised(request: Request,
                   creds: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
        given = creds.credentials if creds else ""
        if not secrets.compare_digest(given.encode(), token.encode()):
            log.warning("rejected %s %s: missing or wrong token", request.method, request.url.path)
            raise HTTPException(401, detail="missing or wrong token: send the header "
                                "'Authorization: Bearer $A2RL_TOKEN' (the token is in your "
                                "environment)")

    auth = [Depends(authorised)]
    for router in routers:
        app.include_router(router, dependencies=auth)  # type: ignore[arg-type]

    @app.get("/health")
    def health() -> dict[str, object]:
        return {"ok": True, "task": grader.task.name}

    @app.get("/status", response_model=StatusResponse, dependencies=auth)
    def status() -> StatusResponse:
        return grader.status()

    @app.post("/submit", response_model=SubmitResponse, dependencies=auth)
    async def submit(request: Request) -> SubmitResponse:
        body = parse_submit(await request.body(), request_model)
        for name, reason in refusals.items():
            if getattr(body, name):
                raise HTTPException(422, detail=reason)
        return await run_in_threadpool(grader.submit, body.model_path, wait=body.wait,
                                       final=body.final)

    @app.post("/final", response_model=FinalDesignation, dependencies=auth)
    async def final(request: Request) -> FinalDesignation:
        raw = await request.body()
        try:
            body = FinalRequest.model_validate_json(raw or b"null")
        except ValidationError:
            raise HTTPException(422, detail='malformed request. Expected: POST /final with '
                                '{"submission_id": "s0003"} or {"model_path": "output/v3"}') \
                from None
        try:
            return grader.designate_final(submission_id=body.submission_id,
                                          model_path=body.model_path)
        except SubmissionRejected as exc:
            raise HTTPException(409, detail=str(exc)) from None

    @app.get("/submissions", response_model=list[PublicSubmission], dependencies=auth)
    def submissions() -> list[PublicSubmission]:
        return [PublicSubmission.of(r) for r in grader.feedback_records()]

    @app.get("/submissions/{submission_id}", response_model=PublicSubmission,
             dependencies=auth)
    def submission(submission_id: str) -> PublicSubmission:
        return PublicSubmission.of(visible_submission(grader, submission_id))

    return app


def bind_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise A2RLError(f"port {port} on {host} is already in use",
                            "choose another --port, or leave it out to pick a free port") from exc
        raise
    sock.listen(128)
    sock.set_inheritable(False)
    return sock


class GraderServer:
    """uvicorn serving `create_app(grader, token, routers, submit_refusals)` from a background
    thread."""

    def __init__(self, grader: Grader, *, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, log_file: Path | None = None,
                 routers: Sequence[APIRouter] = (),
                 submit_refusals: Mapping[str, str] | None = None) -> None:
        import uvicorn

        self.token = token or secrets.token_urlsafe(32)
        self._sock = bind_socket(host, port)
        self.host, self.port = host, self._sock.getsockname()[1]
        if log_file is not None:
            handler = logging.FileHandler(log_file)
            handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
            for name in ("a2rl.grader", "uvicorn.error", "uvicorn.access"):
                lg = logging.getLogger(name)
                lg.addHandler(handler)
                lg.setLevel(logging.INFO)
                lg.propagate = False
        config = uvicorn.Config(create_app(grader, self.token, routers, submit_refusals),
                                log_config=None, log_level="info", access_log=True,
                                lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._sock]}, daemon=True,
                                        name="a2rl-grader-http")

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 20.0) -> GraderServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise A2RLError("the grading server did not start", "see grader.log in the run")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()
