#!/usr/bin/env bash
# A dead webhook endpoint must not slow the mail paths. For each kind of endpoint subscribed to
# every event type: none, healthy (answers 204 at once), refused (nothing listens on its port), silent (accepts connections and
# never answers), slow (answers 204 after 5 s), this measures
#   - POST /v1/send: wrk, $CONNECTIONS connections for $DURATION (each accepted send writes an
#     event for the endpoint once the message is delivered to the local sink);
#   - inbound SMTP: postfix's smtp-source, $MESSAGES messages of 10 KB over 16 sessions into a
#     hosted mailbox (each one an `email.received` event);
# and prints both rates per kind. Everything listens on 127.0.0.1.
#   bash benches/webhooks-dead.sh           (DURATION=10s CONNECTIONS=64 MESSAGES=10000 to change)
# Needs (installed here when missing, on Debian): wrk, dnsmasq, postfix's smtp-sink and
# smtp-source (see benches/common.sh), python3 (the endpoints).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
MESSAGES=${MESSAGES:-10000}
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
source benches/common.sh
postfix_tools
bench_data webhooks-dead
DNS_PORT=5397; SINK_PORT=2597; HEALTHY_PORT=8598; SILENT_PORT=8597; SLOW_PORT=8596; REFUSED_PORT=8595
dnsmasq --no-daemon --keep-in-foreground --port=$DNS_PORT --listen-address=127.0.0.1 --bind-interfaces \
  --no-resolv --no-hosts --mx-host=bench.test,mx.bench.test,10 --address=/mx.bench.test/127.0.0.1 \
  --txt-record=sender.test,"v=spf1 ip4:127.0.0.1 -all" --txt-record=_dmarc.sender.test,"v=DMARC1; p=none" \
  --log-facility=/dev/null &
PIDS="$PIDS $!"
start_sink $SINK_PORT

# healthy: answers 204 at once (the baseline: recording events costs a healthy endpoint too);
# silent: reads each request and never answers; slow: answers 204 after 5 s.
cat > "$DATA/endpoint.py" <<'PY'
import asyncio, sys
port, mode = int(sys.argv[1]), sys.argv[2]
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            await asyncio.sleep({"silent": 3600, "slow": 5}.get(mode, 0))
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()
asyncio.run(main())
PY
python3 "$DATA/endpoint.py" $HEALTHY_PORT healthy & PIDS="$PIDS $!"
python3 "$DATA/endpoint.py" $SILENT_PORT silent & PIDS="$PIDS $!"
python3 "$DATA/endpoint.py" $SLOW_PORT slow & PIDS="$PIDS $!"

EDGEMAIL_API_RATE_PER_SECOND=10000000 EDGEMAIL_API_BURST=10000000 \
EDGEMAIL_DELIVERY_PORT=$SINK_PORT EDGEMAIL_LOG_LEVEL=warn EDGEMAIL_WEBHOOKS_ALLOW_PRIVATE=true \
  start_server --nameserver 127.0.0.1:$DNS_PORT
BASE=http://$HTTP
AUTH="Authorization: Bearer $KEY"
api() { curl -sf -X "$1" "$BASE$2" -H "$AUTH" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
api POST /v1/mailboxes '{"address":"news"}' >/dev/null
api POST /v1/mailboxes '{"address":"inbox"}' >/dev/null
cat > "$DATA/send.lua" <<LUA
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"from":"news@bench.example","to":"u%d-%d@bench.test","subject":"Hello %d","html":"<p>Hello <b>there</b>, this is message %d.</p>"}', math.random(1, 1000000000), n, n, n)
  return wrk.format("POST", "/v1/send", { ["Authorization"] = "Bearer $KEY", ["Content-Type"] = "application/json" }, body)
end
LUA
outbox_empty() { [ "$(api GET '/v1/emails?mailbox=news&folder=outbox&limit=1')" = "[]" ]; }
drain() {
  local deadline=$(( $(date +%s) + 300 ))
  until outbox_empty; do
    [ "$(date +%s)" -lt "$deadline" ] || { echo "the queue did not drain; see $DATA/server.log" >&2; exit 1; }
    sleep 0.5
  done
}
RESULTS=""
measure() {
  local kind=$1 url=$2 id=""
  if [ -n "$url" ]; then
    id=$(api POST /v1/webhooks "{\"url\":\"$url\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  fi
  echo "== $kind: POST /v1/send, $CONNECTIONS connections, $DURATION"
  wrk -t2 -c"$CONNECTIONS" -d"$DURATION" -s "$DATA/send.lua" "$BASE/v1/send" > "$DATA/wrk-$kind.txt"
  local send
  send=$(awk '/Requests\/sec/ {printf "%d", $2}' "$DATA/wrk-$kind.txt")
  grep -E 'Latency|Requests/sec' "$DATA/wrk-$kind.txt"
  drain
  echo "== $kind: inbound SMTP, $MESSAGES messages of 10 KB over 16 sessions"
  local start end inbound
  start=$(date +%s%3N)
  "$POSTFIX_TOOLS/smtp-source" -s 16 -m "$MESSAGES" -l 10240 -f bench@sender.test -t inbox@bench.example "$SMTP"
  end=$(date +%s%3N)
  inbound=$(( MESSAGES * 1000 / (end - start) ))
  echo "$inbound messages/s"
  RESULTS="$RESULTS$(printf '%-28s %10s req/s %10s msg/s' "$kind" "$send" "$inbound")\n"
  [ -z "$id" ] || api DELETE "/v1/webhooks/$id" >/dev/null
}
measure "no webhook" ""
measure "healthy (answers at once)" "http://127.0.0.1:$HEALTHY_PORT/hook"
measure "refused (connection refused)" "http://127.0.0.1:$REFUSED_PORT/hook"
measure "silent (never answers)" "http://127.0.0.1:$SILENT_PORT/hook"
measure "slow (answers after 5 s)" "http://127.0.0.1:$SLOW_PORT/hook"
echo
printf '%-28s %16s %16s\n' "endpoint" "POST /v1/send" "inbound SMTP"
printf "%b" "$RESULTS"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
