#!/usr/bin/env bash
# Fresh machine -> installed gpuparity, a quick-suite run in the store, and report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# shellcheck disable=SC1091
. .venv/bin/activate
export HF_HUB_OFFLINE=1
gpuparity info
# exit 1 means a result failed (it is in the table and the report); 2 and up: stop here
rc=0
gpuparity run --suite quick -f json -o quick-run.json || rc=$?
if [ "$rc" -ge 2 ]; then exit "$rc"; fi
gpuparity report latest -o report.html
echo "report: $(pwd)/report.html"
