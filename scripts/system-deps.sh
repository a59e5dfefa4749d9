#!/usr/bin/env bash
# Debian packages the tests use as real parts: Chromium (report rendering), hipcc (HIP compiles),
# PostgreSQL 15 (team store; the tests start a private server). Skips what is already there.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v hipcc >/dev/null 2>&1 || need+=(hipcc)
[ -x /usr/lib/postgresql/15/bin/initdb ] || need+=(postgresql-15)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
