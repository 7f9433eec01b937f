#!/usr/bin/env bash
# A throwaway PostgreSQL cluster in a folder, listening only on a unix socket there (parallel
# runs never fight over a port):
#   pg-cluster.sh start DIR    create and start it; prints its URL
#   pg-cluster.sh pause DIR    stop the server at once (immediate mode: connections are cut)
#   pg-cluster.sh resume DIR   start it again
#   pg-cluster.sh stop DIR     stop it and remove DIR
# initdb refuses root, so as root the cluster runs as the `postgres` user that Debian's
# postgresql package creates. With PG_PASSWORD set at start, the user `inferd` needs that
# password (scram-sha-256); otherwise no password is asked (trust).
set -euo pipefail
cmd=${1:?usage: pg-cluster.sh start|pause|resume|stop DIR}
dir=${2:?usage: pg-cluster.sh start|pause|resume|stop DIR}
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$bin/initdb" ] || { echo "pg-cluster.sh: PostgreSQL server binaries not found (apt-get install postgresql)" >&2; exit 1; }
as_owner=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || { echo "pg-cluster.sh: no postgres user to run the cluster as" >&2; exit 1; }
  as_owner=(runuser -u postgres --)
fi

run_server() {
  # The server outlives this script: it must not inherit the caller's descriptors beyond 0-2
  # (a caller that waits for a pipe or socket to close, as Foundation's Process does to see
  # its child exit, would otherwise wait for the server's end).
  for fd in $(ls /proc/$$/fd); do
    # (255: the script itself, which bash reads from.)
    [ "$fd" -gt 2 ] && [ "$fd" -ne 255 ] && { eval "exec $fd>&-" 2>/dev/null || true; }
  done
  "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off -c max_connections=200" start \
    </dev/null >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    [ ${#as_owner[@]} -gt 0 ] && chown postgres "$dir"
    auth=(-A trust)
    if [ -n "${PG_PASSWORD:-}" ]; then
      printf '%s\n' "$PG_PASSWORD" >"$dir/pwfile"
      [ ${#as_owner[@]} -gt 0 ] && chown postgres "$dir/pwfile"
      auth=(-A scram-sha-256 --pwfile="$dir/pwfile")
    fi
    "${as_owner[@]}" "$bin/initdb" -D "$dir/data" -U inferd "${auth[@]}" -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
    rm -f "$dir/pwfile"
    run_server
    echo "postgresql://inferd@/postgres?host=$dir"
    ;;
  pause)
    "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
    ;;
  resume)
    run_server
    ;;
  stop)
    if [ -f "$dir/data/postmaster.pid" ]; then
      "${as_owner[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
  *) echo "pg-cluster.sh: unknown command $cmd" >&2; exit 2 ;;
esac
