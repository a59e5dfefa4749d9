#!/usr/bin/env bash
# Refresh the plotly.js basic bundle the report carries (src/gpuparity/report/vendor/), for the
# plotly.js version of the installed plotly.py: run it after upgrading plotly.py (a test fails
# until the versions agree). Needs npm and the npm registry; the result is committed, so an
# install never builds or downloads anything.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-python}"
version="$("$python" -c 'import re, plotly.offline as o; print(re.search(r"plotly\.js v(\S+)", o.get_plotlyjs()[:200]).group(1))')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "plotly.js-basic-dist-min@$version" >/dev/null && tar xzf ./*.tgz)
gzip -9n -c "$work/package/plotly-basic.min.js" > "$here/src/gpuparity/report/vendor/plotly-basic.min.js.gz"
cp "$work/package/LICENSE" "$here/src/gpuparity/report/vendor/LICENSE.plotly.js"
echo "vendored plotly.js-basic-dist-min $version"
