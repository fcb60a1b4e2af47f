#!/usr/bin/env bash
# Load benchmark of the running server with wrk (Debian package `wrk`).
#   bash benches/load.sh            # 64 connections, 10 s per scenario
#   DURATION=30s CONNECTIONS=64 bash benches/load.sh
# Starts a release build on a temporary data directory (durable writes: every 201 is fsynced
# through group commit), seeds a domain, 10 mailboxes and a key, then measures
#   1. GET  /v1/mailboxes
#   2. POST /v1/contacts (a new contact per request)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
# BIN=path/to/edgemail measures another build (for a before/after comparison) without building.
if [ -z "${BIN:-}" ]; then
  cargo build --release --quiet
  BIN=target/release/edgemail
fi
DATA=$(mktemp -d /tmp/edgemail-load.XXXXXX)
LOG=$DATA/server.log
cleanup() { [ -n "${PID:-}" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$DATA"; }
trap cleanup EXIT

$BIN domain add load.test --data "$DATA" >/dev/null
KEY=$($BIN key create --name load --domain load.test --data "$DATA" | tail -n 1)
# One key drives the whole load: lift its per-key limit (default 2,000/s) out of the way.
EDGEMAIL_API_RATE_PER_SECOND=10000000 EDGEMAIL_API_BURST=10000000 \
  $BIN serve --data "$DATA" --http 127.0.0.1:0 2>"$LOG" &
PID=$!
for _ in $(seq 100); do grep -q '^ready$' "$LOG" && break; sleep 0.1; done
ADDR=$(sed -n 's/^listening http=\([^ ]*\).*/\1/p' "$LOG")
BASE=http://$ADDR
for i in $(seq 10); do
  curl -sf -o /dev/null -X POST "$BASE/v1/mailboxes" -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' -d "{\"address\":\"user$i\",\"displayName\":\"User $i\"}"
done

cat > "$DATA/get.lua" <<LUA
wrk.headers["Authorization"] = "Bearer $KEY"
LUA
cat > "$DATA/post.lua" <<LUA
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"email":"u%d-%d@example.com","name":"Load test"}', math.random(1, 1000000000), n)
  return wrk.format("POST", "/v1/contacts",
    { ["Authorization"] = "Bearer $KEY", ["Content-Type"] = "application/json" }, body)
end
LUA

echo "== GET /v1/mailboxes (10 mailboxes), $CONNECTIONS connections, $DURATION"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s "$DATA/get.lua" "$BASE/v1/mailboxes"
echo
echo "== POST /v1/contacts (durable), $CONNECTIONS connections, $DURATION"
wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency -s "$DATA/post.lua" "$BASE/v1/contacts"
echo
echo "status codes logged by the server:"
grep -o 'status=[0-9]*' "$LOG" | sort | uniq -c
