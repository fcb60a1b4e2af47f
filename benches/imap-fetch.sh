#!/usr/bin/env bash
# IMAP FETCH of a large folder: 10,000 messages put in one mailbox's INBOX over inbound SMTP
# (postfix's smtp-source, as benches/inbound.sh), then timed over implicit TLS (IMAPS) with
# Python's imaplib, certificate not verified (the server's self-signed one):
#   1. UID FETCH 1:* (BODY.PEEK[HEADER])   2. FETCH 1:* (FLAGS ENVELOPE)
#   bash benches/imap-fetch.sh          (MESSAGES=10000 SIZE=2048 to change)
set -euo pipefail
cd "$(dirname "$0")/.."
MESSAGES=${MESSAGES:-10000}
SIZE=${SIZE:-2048}
source benches/common.sh
postfix_tools
bench_data imap-fetch
DNS_PORT=5396
dnsmasq --no-daemon --keep-in-foreground --port=$DNS_PORT --listen-address=127.0.0.1 --bind-interfaces \
  --no-resolv --no-hosts --txt-record=sender.test,"v=spf1 ip4:127.0.0.1 -all" \
  --txt-record=_dmarc.sender.test,"v=DMARC1; p=none" --log-facility=/dev/null 2>/dev/null &
PIDS="$PIDS $!"
EDGEMAIL_LOG_LEVEL=warn start_server --nameserver 127.0.0.1:$DNS_PORT --imaps 127.0.0.1:0
IMAPS=$(sed -n 's/.* imaps=\([^ ]*\).*/\1/p' "$DATA/server.log")
BASE=http://$HTTP
AUTH="Authorization: Bearer $KEY"
curl -sf -o /dev/null -X POST "$BASE/v1/mailboxes" -H "$AUTH" -H 'Content-Type: application/json' \
  -d '{"address":"inbox"}'
PASSWORD=$(curl -sf -X POST "$BASE/v1/mailboxes/inbox@bench.example/passwords" -H "$AUTH" \
  -H 'Content-Type: application/json' -d '{"name":"bench"}' | sed -n 's/.*"password":"\([^"]*\)".*/\1/p')
echo "== filling INBOX: $MESSAGES messages of $SIZE bytes over inbound SMTP ($SMTP)"
START=$(date +%s%3N)
"$POSTFIX_TOOLS/smtp-source" -s 16 -m "$MESSAGES" -l "$SIZE" -f bench@sender.test -t inbox@bench.example "$SMTP"
echo "filled in $(( $(date +%s%3N) - START )) ms"

echo "== IMAPS $IMAPS: FETCH of all $MESSAGES messages (Python imaplib, one connection)"
python3 - "$IMAPS" "$PASSWORD" "$MESSAGES" <<'PY'
import imaplib, re, ssl, sys, time
addr, password, expected = sys.argv[1], sys.argv[2], int(sys.argv[3])
host, port = addr.rsplit(":", 1)
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
imap = imaplib.IMAP4_SSL(host, int(port), ssl_context=ctx)
imap.login("inbox@bench.example", password)
typ, data = imap.select("INBOX", readonly=True)
count = int(data[0])
assert count == expected, f"INBOX holds {count} messages, expected {expected}"

def timed(label, run):
    start = time.perf_counter()
    typ, data = run()
    elapsed = time.perf_counter() - start
    assert typ == "OK", (typ, data[:1])
    # One response per message; a response with literals comes in several pieces.
    heads = [item[0] if isinstance(item, tuple) else item for item in data]
    got = sum(1 for head in heads if re.match(rb"\d+ \(", head))
    assert got == expected, f"{label}: {got} messages answered, expected {expected}"
    print(f"{label}: {expected} messages in {elapsed:.3f} s")

timed("UID FETCH 1:* (BODY.PEEK[HEADER])", lambda: imap.uid("FETCH", "1:*", "(BODY.PEEK[HEADER])"))
timed("FETCH 1:* (FLAGS ENVELOPE)", lambda: imap.fetch("1:*", "(FLAGS ENVELOPE)"))
imap.logout()
PY
echo "server warnings: $(grep -c -v -E '^(listening|ready)' "$DATA/server.log" || true)"
