#!/bin/sh
# Starts the PostgreSQL the Go tests use and prints its URL on stdout.
# Idempotent: installs Debian's postgresql when it is missing, starts the
# newest cluster when it is not running, creates the role and database
# agentpool_test (password agentpool_test) when missing. Messages go to
# stderr so that `AGENTPOOL_TEST_POSTGRES=$(tests/pg/start.sh)` works.
# Needs root (apt-get, pg_ctlcluster) or sudo.
set -eu

ROLE=agentpool_test
DB=agentpool_test
PASSWORD=${AGENTPOOL_TEST_PG_PASSWORD:-agentpool_test}

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v pg_lsclusters >/dev/null 2>&1; then
	echo "tests/pg: installing postgresql (Debian package)" >&2
	as_root sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql' >&2
fi

# The newest cluster (pg_lsclusters: Ver Cluster Port Status ...).
line=$(pg_lsclusters -h | sort -k1,1n | tail -n 1)
if [ -z "$line" ]; then
	echo "tests/pg: creating a cluster" >&2
	ver=$(ls /usr/lib/postgresql | sort -n | tail -n 1)
	as_root pg_createcluster "$ver" main >&2
	line=$(pg_lsclusters -h | sort -k1,1n | tail -n 1)
fi
ver=$(echo "$line" | awk '{print $1}')
name=$(echo "$line" | awk '{print $2}')
port=$(echo "$line" | awk '{print $3}')
status=$(echo "$line" | awk '{print $4}')
if [ "$status" != online ]; then
	echo "tests/pg: starting cluster $ver/$name" >&2
	as_root pg_ctlcluster "$ver" "$name" start >&2
fi

psql_admin() {
	as_root su postgres -c "psql -p $port -v ON_ERROR_STOP=1 -qtA $*"
}

# Wait for it to accept connections (a fresh start may take a moment).
i=0
until psql_admin "-c 'SELECT 1'" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ "$i" -ge 50 ]; then
		echo "tests/pg: cluster $ver/$name does not accept connections" >&2
		exit 1
	fi
	sleep 0.2
done

if [ "$(psql_admin "-c \"SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'\"")" != 1 ]; then
	# CREATEDB: tests that need a database of their own make one.
	psql_admin "-c \"CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'\"" >&2
fi
# A test server: commits need not wait for the disk (tests run many
# small transactions; the benchmark asks for synchronous_commit=on).
psql_admin "-c \"ALTER ROLE $ROLE SET synchronous_commit = off\"" >&2

if [ "$(psql_admin "-c \"SELECT 1 FROM pg_database WHERE datname = '$DB'\"")" != 1 ]; then
	psql_admin "-c \"CREATE DATABASE $DB OWNER $ROLE\"" >&2
fi

echo "postgres://$ROLE:$PASSWORD@127.0.0.1:$port/$DB?sslmode=disable"
