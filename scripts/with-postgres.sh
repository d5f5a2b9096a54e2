#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL server: initdb in a temporary directory, the server
# listening on a Unix socket there and on 127.0.0.1 only, SEED_AGENTS_TEST_POSTGRES naming it,
# and the server stopped and its directory removed when the command ends, however it ends.
#
#   scripts/with-postgres.sh cargo test --workspace --all-features
#
# Needs the distribution's PostgreSQL server (Debian: apt-get install postgresql). As root, the
# server runs as the `postgres` user, since initdb refuses to run as root.
set -euo pipefail

bindir=""
if command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
  bindir="$(pg_config --bindir)"
fi
if [ -z "$bindir" ]; then
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
fi
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "with-postgres: no PostgreSQL server found (Debian: apt-get install postgresql)" >&2
  exit 1
fi

dir="$(mktemp -d /tmp/seed-agents-pg.XXXXXX)"
as_owner=()
if [ "$(id -u)" = 0 ]; then
  chown postgres "$dir"
  as_owner=(runuser -u postgres --)
fi
# A free port on loopback, picked by the kernel.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

# What the server logs when it crashed, restarted or turned connections away.
trouble="PANIC|terminated by signal|was terminated|too many clients|recovery mode"
stop() {
  status=$?
  # A failed run shows what the server said (refused connections, crashes, restarts): the log
  # is removed with the directory.
  if [ "$status" != 0 ] && [ -s "$dir/server.log" ]; then
    echo "with-postgres: the command failed ($status); the last lines of the server's log:" >&2
    tail -n 40 "$dir/server.log" >&2
  elif grep -qE "$trouble" "$dir/server.log" 2>/dev/null; then
    echo "with-postgres: the server reported trouble during the run:" >&2
    grep -E "$trouble" "$dir/server.log" | head -n 20 >&2
  fi
  "${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT

"${as_owner[@]}" "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
"${as_owner[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" start >/dev/null

export SEED_AGENTS_TEST_POSTGRES="postgres://postgres@127.0.0.1:$port/postgres"
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2
"$@"
