#!/usr/bin/env bash
# Sequence engine benchmarks, all on 127.0.0.1 (same DNS and sink set-up as benches/send.sh):
#   1. 10,000 enrollments in one sequence (send, 1 s delay, send): time until every enrollment is
#      `completed` and both steps of each are delivered to the sink (20,000 messages);
#   2. the server's CPU while 100,000 enrollments wait on a one-day delay (should be near idle).
#   bash benches/sequences.sh        (ENROLL=10000 WAITING=100000 IDLE_SECONDS=30 to change)
set -euo pipefail
cd "$(dirname "$0")/.."
ENROLL=${ENROLL:-10000}
WAITING=${WAITING:-100000}
IDLE_SECONDS=${IDLE_SECONDS:-30}
source benches/common.sh
postfix_tools
bench_data seq
DNS_PORT=5398; SINK_PORT=2598
start_mx_dns $DNS_PORT
start_sink $SINK_PORT
EDGEMAIL_API_RATE_PER_SECOND=10000000 EDGEMAIL_API_BURST=10000000 \
EDGEMAIL_DELIVERY_PORT=$SINK_PORT EDGEMAIL_LOG_LEVEL=warn \
  start_server --nameserver 127.0.0.1:$DNS_PORT
BASE=http://$HTTP
AUTH="Authorization: Bearer $KEY"
post() { curl -sf -X POST "$BASE$1" -H "$AUTH" -H 'Content-Type: application/json' -d "$2"; }
post /v1/mailboxes '{"address":"sales","displayName":"Bench Sales"}' >/dev/null

# A sequence; prints its id.
sequence() {
  post /v1/sequences "{\"name\":\"$1\",\"from\":\"sales@bench.example\",\"steps\":[
    {\"type\":\"send_email\",\"subject\":\"Hello {{name}}\",\"html\":\"<p>Hi {{name}}, <a href='https://example.com/x'>see this</a>.</p>\"},
    {\"type\":\"delay\",\"delayMs\":$2},
    {\"type\":\"send_email\",\"subject\":\"\",\"html\":\"<p>Following up, {{name}}.</p>\"}]}" |
    sed -n 's/.*"id":"\([^"]*\)".*/\1/p'
}
# Enrolls $2 contacts (prefix $3) in sequence $1, 100 per request.
enroll() {
  for r in $(seq $(( $2 / 100 ))); do
    CONTACTS=$(seq 100 | sed "s/.*/{\"email\":\"$3$r-&@bench.test\",\"mergeFields\":{\"name\":\"C$r-&\"}}/" | paste -sd, -)
    post "/v1/sequences/$1/enroll" "{\"contacts\":[$CONTACTS]}" >/dev/null
  done
}
# The sequence's `completed` counter.
completed() {
  curl -sf "$BASE/v1/sequences" -H "$AUTH" |
    python3 -c "import json,sys; print(next(s['stats']['completed'] for s in json.load(sys.stdin) if s['id']=='$1'))"
}
outbox_empty() {
  [ "$(curl -sf "$BASE/v1/emails?mailbox=sales&folder=outbox&limit=1" -H "$AUTH")" = "[]" ]
}

echo "== $ENROLL enrollments: send, 1 s delay, send"
SEQ=$(sequence fast 1000)
START=$(date +%s%3N)
enroll "$SEQ" "$ENROLL" f
ENROLLED=$(date +%s%3N)
DEADLINE=$(( $(date +%s) + 600 ))
until [ "$(completed "$SEQ")" = "$ENROLL" ] && outbox_empty; do
  [ "$(date +%s)" -lt "$DEADLINE" ] || { echo "did not finish; see $DATA/server.log" >&2; exit 1; }
  sleep 0.2
done
END=$(date +%s%3N)
echo "enrolled $ENROLL in $(( ENROLLED - START )) ms; all completed and $(( ENROLL * 2 )) messages delivered after $(( END - START )) ms"

echo
echo "== $WAITING enrollments waiting on a one-day delay"
SEQ2=$(sequence slow 86400000)
START=$(date +%s%3N)
enroll "$SEQ2" "$WAITING" w
until outbox_empty; do sleep 0.5; done
echo "enrolled and first step delivered for $WAITING in $(( $(date +%s%3N) - START )) ms"
sleep 2
TICKS=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }
BEFORE=$(cpu)
sleep "$IDLE_SECONDS"
AFTER=$(cpu)
echo "server CPU while $WAITING wait: $(( (AFTER - BEFORE) * 1000 / TICKS )) ms of CPU in ${IDLE_SECONDS} s" \
  "($(echo "scale=3; ($AFTER - $BEFORE) * 100 / $TICKS / $IDLE_SECONDS" | bc) % of one core)"
echo "server warnings/errors:"; grep -v "^listening\|^ready$" "$DATA/server.log" | head -5 || true
