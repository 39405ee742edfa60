#!/usr/bin/env bash
# System tools a2rl uses: bubblewrap isolates the agent (and HumanEval programs), strace records
# which programs the agent ran, a C/C++ toolchain and cmake build the ALFWorld engine, and
# Node.js 20+ with npm installs and runs the agent CLIs (a2rl agents install).
# Install them when we can (root + apt); otherwise explain.
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v strace >/dev/null 2>&1 || missing+=(strace)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -eq 0 ]; then :
elif [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "WARNING: missing system packages: ${missing[*]} (sudo apt-get install ${missing[*]})." >&2
  echo "         Without bubblewrap 'a2rl run' refuses to start unless you pass --no-sandbox;" >&2
  echo "         without strace runs are not exec-traced (the analysis falls back to transcripts)." >&2
fi
# The second sandbox backend (rootless or root podman; runc because crun refuses hybrid cgroup
# hierarchies, catatonit as the container's init). Optional: without it `--sandbox podman` says
# what is missing and its contract tests are skipped.
if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing podman runc catatonit (optional sandbox backend)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc catatonit >/dev/null; } \
      || echo "WARNING: podman could not be installed; --sandbox podman stays unavailable" >&2
  fi
fi
# Chromium for the report's browser test (tests/report/test_report.py drives Debian's chromium through
# playwright; playwright cannot download its own browsers here). Optional: without it that one
# test is skipped.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing chromium (the report's browser test)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
      || echo "WARNING: chromium could not be installed; the report's browser test is skipped" >&2
  fi
fi
if command -v node >/dev/null 2>&1; then
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  [ "$major" -ge 20 ] || echo "WARNING: Node.js $(node --version) is older than 20: the Gemini CLI needs 20+." >&2
fi
