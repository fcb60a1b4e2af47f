#!/usr/bin/env bash
# SMTP submission throughput: messages accepted per second over `--submissions` (implicit TLS,
# RFC 8314) by several concurrent Python smtplib clients, each logged in once with an app
# password and sending many messages on its session; one recipient each at bench.test, which a
# local dnsmasq points (MX) at postfix's smtp-sink, so the queue delivers meanwhile, as in
# production.
#   bash benches/submission.sh          (MESSAGES=10000 CLIENTS=8 to change)
set -euo pipefail
cd "$(dirname "$0")/.."
MESSAGES=${MESSAGES:-10000}
CLIENTS=${CLIENTS:-8}
source benches/common.sh
postfix_tools
bench_data submission
DNS_PORT=5397; SINK_PORT=2597
start_mx_dns $DNS_PORT
start_sink $SINK_PORT
EDGEMAIL_DELIVERY_PORT=$SINK_PORT EDGEMAIL_LOG_LEVEL=warn \
  start_server --nameserver 127.0.0.1:$DNS_PORT --submissions 127.0.0.1:0
SUBMISSIONS=$(sed -n 's/.* submissions=\([^ ]*\).*/\1/p' "$DATA/server.log")
BASE=http://$HTTP
AUTH="Authorization: Bearer $KEY"
curl -sf -o /dev/null -X POST "$BASE/v1/mailboxes" -H "$AUTH" -H 'Content-Type: application/json' \
  -d '{"address":"news"}'
PASSWORD=$(curl -sf -X POST "$BASE/v1/mailboxes/news@bench.example/passwords" -H "$AUTH" \
  -H 'Content-Type: application/json' -d '{"name":"bench"}' | sed -n 's/.*"password":"\([^"]*\)".*/\1/p')

echo "== $MESSAGES messages over $CLIENTS submission sessions (implicit TLS) to $SUBMISSIONS"
python3 - "$SUBMISSIONS" "$PASSWORD" "$MESSAGES" "$CLIENTS" <<'PY'
import multiprocessing, smtplib, ssl, sys, time
addr, password, messages, clients = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
host, port = addr.rsplit(":", 1)
sender = "news@bench.example"

def client(args):
    n, count, ready, go = args
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    smtp = smtplib.SMTP_SSL(host, int(port), context=ctx)
    smtp.login(sender, password)
    ready.put(n)
    go.wait()
    for i in range(count):
        to = f"c{n}-{i}@bench.test"
        body = (f"From: {sender}\r\nTo: {to}\r\nSubject: Bench {n}-{i}\r\n\r\n"
                f"Hello, this is message {i} of client {n}.\r\n")
        refused = smtp.sendmail(sender, [to], body)
        assert not refused, refused
    smtp.quit()
    return count

if __name__ == "__main__":
    manager = multiprocessing.Manager()
    ready, go = manager.Queue(), manager.Event()
    share = [messages // clients + (1 if n < messages % clients else 0) for n in range(clients)]
    with multiprocessing.Pool(clients) as pool:
        result = pool.map_async(client, [(n, share[n], ready, go) for n in range(clients)])
        for _ in range(clients):  # logins (argon2) are outside the timing
            ready.get(timeout=60)
        start = time.perf_counter()
        go.set()
        sent = sum(result.get())
        elapsed = time.perf_counter() - start
    print(f"accepted {sent} messages in {elapsed * 1000:.0f} ms: {sent / elapsed:.0f} messages/s")
PY
echo "server warnings: $(grep -c -v -E '^(listening|ready)' "$DATA/server.log" || true)"
