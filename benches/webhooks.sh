#!/usr/bin/env bash
# Webhook benchmarks, all on 127.0.0.1:
#   1. events delivered per second to a local receiver while mail is being delivered: a campaign
#      of $MESSAGES messages to a local SMTP sink, each `email.delivered` posted to $ENDPOINTS
#      endpoints (signed; the receiver checks every 100th signature with Python's own hmac), and
#      how long after the last message was delivered the last event arrived (the backlog);
#   2. a dead endpoint (accepts connections, never answers) must not slow `POST /v1/send`: wrk
#      figures with no endpoint, then with that endpoint subscribed to every event.
#   bash benches/webhooks.sh
# Needs (installed here when missing, on Debian): wrk, dnsmasq, postfix's smtp-sink (see
# benches/common.sh), python3 (the receivers).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
MESSAGES=${MESSAGES:-5000}
ENDPOINTS=${ENDPOINTS:-16}
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
source benches/common.sh
postfix_tools
bench_data webhooks
DNS_PORT=5398; SINK_PORT=2598; RECEIVER_PORT=8598; DEAD_PORT=8599
start_mx_dns $DNS_PORT
start_sink $SINK_PORT

# The receiver: answers 204 at once, counts posts, and on GET /stats reports
# {count, first, last (ms), checked, bad}. The dead one reads requests and never answers.
cat > "$DATA/receiver.py" <<'PY'
import asyncio, base64, hashlib, hmac, json, multiprocessing as mp, os, signal, socket, sys, time
port, mode, secret_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
# $RECEIVER_WORKERS processes share the port (SO_REUSEPORT) and these counters, so one
# Python process is not what limits the figure: count, first, last (ms), checked, bad.
shared = mp.Array("q", 5)
def key():
    try:
        return [base64.b64decode(s.strip()[6:]) for s in open(secret_file) if s.strip()]
    except OSError:
        return []
def stats():
    with shared.get_lock():
        return dict(zip(["count", "first", "last", "checked", "bad"], shared[:]))
async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = {k.strip().lower(): v.strip() for k, _, v in (l.partition(":") for l in lines[1:] if l)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            if mode == "dead":
                await asyncio.sleep(3600)
                return
            if lines[0].startswith("GET /stats"):
                out = json.dumps(stats()).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(out), out))
                await writer.drain()
                continue
            now = int(time.time() * 1000)
            with shared.get_lock():
                shared[0] += 1
                n = shared[0]
                shared[1] = shared[1] or now
                shared[2] = max(shared[2], now)
            if n % 100 == 1:
                signed = ("%s.%s." % (headers["webhook-id"], headers["webhook-timestamp"])).encode() + body
                sigs = [s[3:] for s in headers["webhook-signature"].split(" ") if s.startswith("v1,")]
                ok = any(hmac.compare_digest(base64.b64encode(hmac.new(k, signed, hashlib.sha256).digest()).decode(), s)
                         for k in key() for s in sigs)
                with shared.get_lock():
                    shared[3] += 1
                    shared[4] += 0 if ok else 1
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()
def serve():
    async def main():
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(("127.0.0.1", port))
        server = await asyncio.start_server(handle, sock=sock, backlog=1024)
        async with server:
            await server.serve_forever()
    asyncio.run(main())
# Stopped with the bench (SIGTERM): the workers go with this process.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
workers = [mp.Process(target=serve, daemon=True) for _ in range(int(os.environ.get("RECEIVER_WORKERS", "2")))]
for w in workers:
    w.start()
for w in workers:
    w.join()
PY
python3 "$DATA/receiver.py" $RECEIVER_PORT live "$DATA/secrets" 2>/dev/null & PIDS="$PIDS $!"
RECEIVER_WORKERS=1 python3 "$DATA/receiver.py" $DEAD_PORT dead /dev/null 2>/dev/null & PIDS="$PIDS $!"

EDGEMAIL_API_RATE_PER_SECOND=10000000 EDGEMAIL_API_BURST=10000000 \
EDGEMAIL_DELIVERY_PORT=$SINK_PORT EDGEMAIL_LOG_LEVEL=warn EDGEMAIL_WEBHOOKS_ALLOW_PRIVATE=true \
  start_server --nameserver 127.0.0.1:$DNS_PORT
BASE=http://$HTTP
AUTH="Authorization: Bearer $KEY"
api() { curl -sf -X "$1" "$BASE$2" -H "$AUTH" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
api POST /v1/mailboxes '{"address":"news","displayName":"Bench News"}' >/dev/null

outbox_empty() { [ "$(api GET '/v1/emails?mailbox=news&folder=outbox&limit=1')" = "[]" ]; }
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
send_load() {
  wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --latency -s "$DATA/send.lua" "$BASE/v1/send" | tee "$DATA/wrk-$1.txt"
}

echo "== before: POST /v1/send with no webhook endpoint, $CONNECTIONS connections, $DURATION"
send_load before
drain 0.5

echo
echo "== events: $MESSAGES campaign messages delivered to the sink, email.delivered to $ENDPOINTS endpoints"
IDS=()
for n in $(seq $ENDPOINTS); do
  CREATED=$(api POST /v1/webhooks "{\"url\":\"http://127.0.0.1:$RECEIVER_PORT/e$n\",\"events\":[\"email.delivered\"]}")
  IDS+=("$(echo "$CREATED" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')")
  echo "$CREATED" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])' >> "$DATA/secrets"
done
AT=$(( $(date +%s%3N) + 4000 ))
BATCHES=$(( MESSAGES / 500 ))
for b in $(seq "$BATCHES"); do
  TO=$(seq 500 | sed "s/.*/\"r$b-&@bench.test\"/" | paste -sd, -)
  api POST /v1/send "{\"from\":\"news@bench.example\",\"to\":[$TO],\"subject\":\"Campaign\",\"html\":\"<p>Hi</p>\",\"type\":\"campaign\",\"scheduledAt\":$AT}" >/dev/null
done
WANT=$(( BATCHES * 500 * ENDPOINTS ))
stats() { curl -sf "http://127.0.0.1:$RECEIVER_PORT/stats"; }
field() { stats | python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }
NOW=$(date +%s%3N)
sleep "$(echo "($AT - $NOW) / 1000" | bc -l)"
drain 0.05
DRAINED=$(date +%s%3N)
DEADLINE=$(( $(date +%s) + 300 ))
until [ "$(field count)" -ge "$WANT" ]; do
  [ "$(date +%s)" -lt "$DEADLINE" ] || { echo "only $(field count) of $WANT events arrived" >&2; exit 1; }
  sleep 0.05
done
S=$(stats)
echo "$S"
python3 - "$S" "$AT" "$WANT" "$DRAINED" <<'PY'
import json, sys
s, at, want, drained = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
window = max(1, s["last"] - s["first"])
print(f"{s['count']} events (want {want}) from the first at +{s['first'] - at} ms to the last at +{s['last'] - at} ms after the campaign was due")
print(f"the outbox was empty (all mail delivered) at +{drained - at} ms: the last event came {s['last'] - drained} ms after that")
print(f"events delivered: {s['count'] * 1000 // window} events/s over the receiving window ({window} ms); signatures checked {s['checked']}, bad {s['bad']}")
PY
for id in "${IDS[@]}"; do api DELETE "/v1/webhooks/$id" >/dev/null; done

echo
echo "== after: POST /v1/send with a dead endpoint subscribed to every event, $CONNECTIONS connections, $DURATION"
api POST /v1/webhooks "{\"url\":\"http://127.0.0.1:$DEAD_PORT/never\"}" >/dev/null
send_load after
echo
echo "POST /v1/send req/s: before $(awk '/Requests\/sec/ {print $2}' "$DATA/wrk-before.txt"), with a dead endpoint $(awk '/Requests\/sec/ {print $2}' "$DATA/wrk-after.txt")"
grep -c . "$DATA/server.log" | xargs echo "server log lines (warnings/errors):"
