#!/usr/bin/env bash
# The scaffold's tool: journal, plan review, revision decisions, evaluator reports.
# Every call goes to the grader; its copy (outside this workspace) is the authoritative one.
set -euo pipefail
: "${A2RL_GRADER_URL:?A2RL_GRADER_URL is not set}"
: "${A2RL_TOKEN:?A2RL_TOKEN is not set}"
# "$0" goes along so that an exec trace still sees scaffold.sh once python3 replaces the shell
# (the analysis times the scaffold's tools by that name).
exec python3 - "$0" "$@" <<'PY'
import json, os, sys, urllib.error, urllib.request

USAGE = """usage:
  ./scaffold.sh state                              what is on, what waits for you
  ./scaffold.sh journal add KIND TEXT [--follows ID,ID] [--strategy K,D,G]
                                                   KIND: plan observation lesson eval_result eval_analysis
  ./scaffold.sh journal [KIND]                     read the journal back
  ./scaffold.sh plan FILE.json                     submit your plan for review
  ./scaffold.sh plan                               the review state of your plans
  ./scaffold.sh decision                           the revision checkpoint waiting for you, if any
  ./scaffold.sh decide keep REASON
  ./scaffold.sh decide switch K D G REASON         e.g. decide switch RL curated "from checkpoint" "..."
  ./scaffold.sh evaluation SUBMISSION_ID           the evaluator's report on a submission"""


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(os.environ["A2RL_GRADER_URL"] + path, data=data, method=method,
                                 headers={"Authorization": "Bearer " + os.environ["A2RL_TOKEN"],
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=900) as resp:
            out = json.load(resp)
    except urllib.error.HTTPError as exc:
        sys.exit(f"scaffold.sh: {exc.code}: {exc.read().decode(errors='replace')}")
    except Exception as exc:
        sys.exit(f"scaffold.sh: cannot reach the grader: {exc}")
    print(json.dumps(out, indent=1))
    return out


def strategy(text):
    k, d, g = (part.strip() for part in text.split(","))
    return {"k": k, "d": d, "g": g}


args = sys.argv[2:]  # [0] is "-", [1] this tool's path
if not args or args[0] in ("-h", "--help", "help"):
    sys.exit(USAGE)
cmd, rest = args[0], args[1:]
if cmd == "state":
    call("GET", "/scaffold")
elif cmd == "journal" and rest[:1] == ["add"]:
    if len(rest) < 3:
        sys.exit(USAGE)
    body = {"kind": rest[1], "text": rest[2]}
    opts = rest[3:]
    while opts:
        flag, value, opts = opts[0], opts[1] if len(opts) > 1 else "", opts[2:]
        if flag == "--follows":
            body["follows"] = [v for v in value.split(",") if v]
        elif flag == "--strategy":
            body["strategy"] = strategy(value)
        else:
            sys.exit(USAGE)
    call("POST", "/scaffold/journal", body)
elif cmd == "journal":
    call("GET", "/scaffold/journal" + (f"?kind={rest[0]}" if rest else ""))
elif cmd == "plan" and rest:
    with open(rest[0]) as fh:
        call("POST", "/scaffold/plan", json.load(fh))
elif cmd == "plan":
    call("GET", "/scaffold/plan")
elif cmd == "decision":
    call("GET", "/scaffold/decision")
elif cmd == "decide" and rest and rest[0] in ("keep", "switch"):
    pending = call("GET", "/scaffold/decision")
    if not pending:
        sys.exit("scaffold.sh: no checkpoint is waiting for a decision")
    body = {"checkpoint_id": pending["checkpoint_id"], "action": rest[0]}
    if rest[0] == "keep" and len(rest) == 2:
        body["reason"] = rest[1]
    elif rest[0] == "switch" and len(rest) == 5:
        body["strategy"] = {"k": rest[1], "d": rest[2], "g": rest[3]}
        body["reason"] = rest[4]
    else:
        sys.exit(USAGE)
    call("POST", "/scaffold/decision", body)
elif cmd == "evaluation" and len(rest) == 1:
    call("GET", f"/scaffold/evaluations/{rest[0]}")
else:
    sys.exit(USAGE)
PY
