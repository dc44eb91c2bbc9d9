#!/usr/bin/env bash
# Make sure the PostgreSQL and RabbitMQ servers that the tests talk to are running on this
# machine, starting them if they are installed but stopped. Checks first, starts second:
# never assumes a server started by hand earlier is still up.
set -euo pipefail

PG_HOST=127.0.0.1
PG_PORT=5432

pg_up() { pg_isready -q -h "$PG_HOST" -p "$PG_PORT"; }
rabbit_up() { timeout 20 rabbitmq-diagnostics -q ping >/dev/null 2>&1; }

wait_for() {
  local what=$1 check=$2 tries=${3:-60}
  for _ in $(seq "$tries"); do
    if $check; then return 0; fi
    sleep 1
  done
  echo "ensure-services: $what did not come up" >&2
  return 1
}

if ! pg_up; then
  if ! command -v pg_ctlcluster >/dev/null; then
    echo "ensure-services: installing PostgreSQL" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  echo "ensure-services: starting PostgreSQL" >&2
  for v in $(ls /etc/postgresql); do
    pg_ctlcluster --skip-systemctl-redirect "$v" main start || true
  done
  wait_for PostgreSQL pg_up
fi

if ! rabbit_up; then
  if ! command -v rabbitmq-server >/dev/null; then
    echo "ensure-services: installing RabbitMQ" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rabbitmq-server >/dev/null
  fi
  echo "ensure-services: starting RabbitMQ" >&2
  rabbitmq-server -detached || true
  wait_for RabbitMQ rabbit_up 120
fi

# Up is not enough: after a restart RabbitMQ's quorum-queue machinery can be left dead
# while the node answers pings (a dead-letter worker crashing as a queue is deleted), and
# then every quorum queue call hangs. Listing the queues is the cheapest call that needs
# it; when it does not answer, restart the application (the data stays).
rabbit_serves() { timeout 30 rabbitmqctl -q list_queues name >/dev/null 2>&1; }
if ! rabbit_serves; then
  echo "ensure-services: RabbitMQ answers pings but not queue calls; restarting its application" >&2
  timeout 60 rabbitmqctl stop_app >/dev/null 2>&1 || true
  timeout 120 rabbitmqctl start_app >/dev/null 2>&1 || true
  wait_for "RabbitMQ's queues" rabbit_serves 10
fi

echo "ensure-services: PostgreSQL and RabbitMQ are up"
