#!/usr/bin/env bash
# bubblewrap isolates the agent. Install it when we can (root + apt); otherwise explain.
set -euo pipefail
if command -v bwrap >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing bubblewrap (sandbox for the agent)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
  exit 0
fi
echo "WARNING: bubblewrap (bwrap) is not installed and cannot be installed automatically." >&2
echo "         Install it (sudo apt-get install bubblewrap) so agents run sandboxed;" >&2
echo "         without it 'a2rl run' refuses to start unless you pass --no-sandbox." >&2
