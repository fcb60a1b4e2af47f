#!/usr/bin/env bash
# Sending benchmarks, all on 127.0.0.1:
#   1. accepted sends per second: POST /v1/send, one recipient, 64 connections (wrk), durable;
#   2. messages delivered per second to a local SMTP sink: DKIM-signed (RSA-2048 + Ed25519),
#      over pooled connections, found through MX lookups.
#   bash benches/send.sh
#   SENDS=0 bash benches/send.sh     (the delivery row alone)
# Needs (installed here when missing, on Debian): wrk, dnsmasq (MX and A records for bench.test),
# postfix's smtp-sink (taken from the postfix package with `apt-get download`, not installed).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
MESSAGES=${MESSAGES:-10000}
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
source benches/common.sh
postfix_tools
bench_data send
DNS_PORT=5399; SINK_PORT=2599
start_mx_dns $DNS_PORT
start_sink $SINK_PORT
# One key drives the whole load: lift its per-key limit (default 2,000/s) out of the way. The log
# stays at its default level (info), as a server runs: a line per request and per delivery.
EDGEMAIL_API_RATE_PER_SECOND=10000000 EDGEMAIL_API_BURST=10000000 \
EDGEMAIL_DELIVERY_PORT=$SINK_PORT \
  start_server --nameserver 127.0.0.1:$DNS_PORT
BASE=http://$HTTP
AUTH="Authorization: Bearer $KEY"
curl -sf -o /dev/null -X POST "$BASE/v1/mailboxes" -H "$AUTH" -H 'Content-Type: application/json' \
  -d '{"address":"news","displayName":"Bench News"}'

outbox_empty() {
  [ "$(curl -sf "$BASE/v1/emails?mailbox=news&folder=outbox&limit=1" -H "$AUTH")" = "[]" ]
}
drain() {
  local deadline=$(( $(date +%s) + 300 ))
  until outbox_empty; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "the queue did not drain; see $DATA/server.log" >&2; exit 1; }
    sleep "$1"
  done
}

cat > "$DATA/send.lua" <<LUA
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"from":"news@bench.example","to":"u%d-%d@bench.test","subject":"Hello %d","html":"<p>Hello <b>there</b>, this is message %d.</p>"}', math.random(1, 1000000000), n, n, n)
  return wrk.format("POST", "/v1/send", { ["Authorization"] = "Bearer $KEY", ["Content-Type"] = "application/json" }, body)
end
LUA
if [ "${SENDS:-1}" = 1 ]; then
  echo "== POST /v1/send (1 recipient, durable; delivery runs at the same time), $CONNECTIONS connections, $DURATION"
  wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s "$DATA/send.lua" "$BASE/v1/send"
  echo "waiting for the queue to drain..."
  drain 0.5
fi

echo
echo "== delivery: $MESSAGES campaign messages scheduled together, DKIM-signed, to the sink"
AT=$(( $(date +%s%3N) + 4000 ))
BATCHES=$(( MESSAGES / 500 ))
for b in $(seq "$BATCHES"); do
  TO=$(seq 500 | sed "s/.*/\"r$b-&@bench.test\"/" | paste -sd, -)
  curl -sf -o /dev/null -X POST "$BASE/v1/send" -H "$AUTH" -H 'Content-Type: application/json' \
    -d "{\"from\":\"news@bench.example\",\"to\":[$TO],\"subject\":\"Campaign\",\"html\":\"<p>Hi, see <a href='https://example.com/x'>this</a>.</p>\",\"type\":\"campaign\",\"scheduledAt\":$AT}"
done
NOW=$(date +%s%3N)
[ "$NOW" -lt "$AT" ] || { echo "scheduling took too long; raise the 4000 ms lead" >&2; exit 1; }
sleep "$(echo "($AT - $NOW) / 1000" | bc -l)"
# Where the machine's CPU went while the queue drained: the server (DKIM signing included), the
# sink, and the rest (the kernel's loopback in softirq, this script's polls), each in ms a message.
TICK=$(getconf CLK_TCK)
THREADS0=$(thread_ticks "$SERVER")
SERVER0=$(cpu_ticks "$SERVER"); SINK0=$(cpu_ticks "$SINK"); MACHINE0=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat)
drain 0.05
END=$(date +%s%3N)
THREADS1=$(thread_ticks "$SERVER")
SERVER1=$(cpu_ticks "$SERVER"); SINK1=$(cpu_ticks "$SINK"); MACHINE1=$(awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat)
ELAPSED=$(( END - AT ))
N=$(( BATCHES * 500 ))
echo "delivered $N messages in ${ELAPSED} ms: $(( N * 1000 / ELAPSED )) messages/s"
echo "$SERVER0 $SERVER1 $SINK0 $SINK1 $MACHINE0 $MACHINE1" | awk -v n="$N" -v t="$TICK" '{
  s = ($2 - $1) * 1000 / t / n; k = ($4 - $3) * 1000 / t / n; m = ($6 - $5) * 1000 / t / n
  printf "CPU a message: server %.3f ms, sink %.3f ms, the rest of the machine %.3f ms (all %.3f)\n", s, k, m - s - k, m }'
# The server's share by thread name (DKIM signers, runtime workers, the store's writer...).
thread_split "$N" "$THREADS0" "$THREADS1"
grep -c . "$DATA/server.log" | xargs echo "server log lines (warnings/errors):"
