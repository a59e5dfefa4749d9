#!/usr/bin/env bash
# A private PostgreSQL cluster for the store tests (and for trying a team store locally).
#
#   eval "$(bash scripts/ci/postgres.sh start)"        # new cluster in a temp dir, free port
#   bash scripts/ci/postgres.sh start DIR PORT          # (re)start the cluster in DIR on PORT
#   bash scripts/ci/postgres.sh stop DIR                # fast shutdown (drops connections)
#
# `start` prints two export lines: GPUPARITY_TEST_PG (the URL; trust auth on 127.0.0.1 only)
# and GPUPARITY_TEST_PG_DIR. The machine's server stays untouched: the cluster lives in DIR,
# owned by the postgres user when run as root (initdb refuses root), listens on 127.0.0.1.
# PostgreSQL 15 is preferred (Debian: /usr/lib/postgresql/15/bin); PGBIN overrides.
set -euo pipefail

pgbin() {
  if [ -n "${PGBIN:-}" ]; then echo "$PGBIN"; return; fi
  if [ -x /usr/lib/postgresql/15/bin/initdb ]; then echo /usr/lib/postgresql/15/bin; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$d" ]; then echo "$d"; return; fi
  if command -v pg_config >/dev/null 2>&1; then pg_config --bindir; return; fi
  d=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
  [ -x "$d/initdb" ] || { echo "postgres.sh: no PostgreSQL server binaries (apt-get install postgresql-15)" >&2; exit 3; }
  echo "$d"
}

# Run a server binary as the postgres user when we are root.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  local bin dir port
  bin=$(pgbin)
  dir=${1:-}
  port=${2:-$(free_port)}
  if [ -z "$dir" ]; then
    dir=$(mktemp -d /tmp/gpuparity-pg.XXXXXX)
  fi
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust --encoding=UTF8 --no-sync \
      >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 4; }
  fi
  # fsync off: a throwaway test cluster; the socket goes in DIR, not the system's /run/postgresql.
  as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 5; }
  echo "export GPUPARITY_TEST_PG=postgresql://postgres@127.0.0.1:$port/postgres"
  echo "export GPUPARITY_TEST_PG_DIR=$dir"
}

stop() {
  local dir=${1:?usage: postgres.sh stop DIR}
  as_pg "$(pgbin)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  *) echo "usage: $0 start [DIR [PORT]] | stop DIR" >&2; exit 2 ;;
esac
