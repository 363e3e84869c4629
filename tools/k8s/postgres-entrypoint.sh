#!/bin/sh
# Entrypoint of localhost/postgres:15-bookworm-local (postgres.Containerfile).
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  mkdir -p "$PGDATA" && chmod 700 "$PGDATA"
  pw=$(mktemp) && printf '%s' "$POSTGRES_PASSWORD" >"$pw"
  initdb -D "$PGDATA" -U postgres --pwfile="$pw" --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pw"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w start >/dev/null
  psql -h /tmp -U postgres -v ON_ERROR_STOP=1 -q \
    -v user="$POSTGRES_USER" -v pass="$POSTGRES_PASSWORD" -v db="$POSTGRES_DB" <<'SQL'
CREATE ROLE :"user" LOGIN PASSWORD :'pass';
CREATE DATABASE :"db" OWNER :"user";
SQL
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "initialised $PGDATA (database $POSTGRES_DB, owner $POSTGRES_USER)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp
