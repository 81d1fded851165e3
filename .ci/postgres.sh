# shellcheck shell=bash
# Sourced by .ci/run: start a throwaway PostgreSQL server for the brain's tests and export
# FLEXJOB_TEST_PG_URL. Installs PostgreSQL from Debian when it is missing (needs root). The server
# runs as a non-root user in a temp dir, listens on 127.0.0.1 on a free port, and is stopped (and
# its dir removed) when the sourcing shell exits. Set FLEXJOB_TEST_PG_URL yourself to skip this.

flexjob_pg_bindir() {
  # The directory holding initdb, pg_ctl and createdb together (PATH entries may be symlinks).
  local d
  for d in "$(dirname "$(readlink -f "$(command -v initdb 2>/dev/null || echo /nonexistent)")")" \
    $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/createdb" ]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

flexjob_pg_as() {
  # Run a PostgreSQL program as the server's user (root cannot run initdb or the server).
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$FLEXJOB_PG_USER" -- "$@"
  else
    "$@"
  fi
}

flexjob_pg_start() {
  local bindir pg_user port
  if ! bindir=$(flexjob_pg_bindir); then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      echo "postgres.sh: installing PostgreSQL from Debian" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -q >&2 && apt-get install -y -q postgresql >&2
    fi
    bindir=$(flexjob_pg_bindir) || {
      echo "postgres.sh: no initdb/pg_ctl found and cannot install PostgreSQL" >&2
      return 1
    }
  fi

  # initdb refuses to run as root: run the server as an unprivileged user.
  if [ "$(id -u)" = 0 ]; then
    pg_user=postgres
    if ! id "$pg_user" >/dev/null 2>&1; then
      pg_user=flexjob-pg
      id "$pg_user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /bin/sh "$pg_user"
    fi
  else
    pg_user=$(id -un)
  fi
  FLEXJOB_PG_USER=$pg_user

  FLEXJOB_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/flexjob-pg.XXXXXX")
  FLEXJOB_PG_CTL="$bindir/pg_ctl"
  trap flexjob_pg_stop EXIT
  chmod 755 "$FLEXJOB_PG_DIR"
  if [ "$(id -u)" = 0 ]; then chown "$pg_user" "$FLEXJOB_PG_DIR"; fi
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

  flexjob_pg_as "$bindir/initdb" -D "$FLEXJOB_PG_DIR/data" -U flexjob -A trust -E UTF8 \
    --no-instructions >"$FLEXJOB_PG_DIR/initdb.log" 2>&1 || {
    cat "$FLEXJOB_PG_DIR/initdb.log" >&2
    return 1
  }
  flexjob_pg_as "$bindir/pg_ctl" -D "$FLEXJOB_PG_DIR/data" -l "$FLEXJOB_PG_DIR/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $FLEXJOB_PG_DIR -c fsync=off" start >&2 || {
    cat "$FLEXJOB_PG_DIR/server.log" >&2
    return 1
  }
  flexjob_pg_as "$bindir/createdb" -h 127.0.0.1 -p "$port" -U flexjob flexjob_test
  export FLEXJOB_TEST_PG_URL="postgresql+psycopg://flexjob@127.0.0.1:$port/flexjob_test"
  echo "postgres.sh: $("$bindir/pg_ctl" --version) on 127.0.0.1:$port," \
    "FLEXJOB_TEST_PG_URL=$FLEXJOB_TEST_PG_URL" >&2
}

flexjob_pg_stop() {
  local rc=$?
  if [ -n "${FLEXJOB_PG_DIR:-}" ] && [ -d "$FLEXJOB_PG_DIR" ]; then
    flexjob_pg_as "$FLEXJOB_PG_CTL" -D "$FLEXJOB_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$FLEXJOB_PG_DIR"
    echo "postgres.sh: PostgreSQL stopped" >&2
  fi
  return $rc
}

if [ -z "${FLEXJOB_TEST_PG_URL:-}" ]; then
  flexjob_pg_start
fi
