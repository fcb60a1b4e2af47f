#!/usr/bin/env bash
# Inbound SMTP benchmark: 10 KB messages over 16 connections into one hosted mailbox with the spam
# filter and a Sieve script on, then into one with both off, each message authenticated
# (SPF/DKIM/DMARC against a local dnsmasq) and committed before its 250.
#   bash benches/inbound.sh          (MESSAGES=20000 SESSIONS=16 SIZE=10240 to change)
#   POSTFIX=1 bash benches/inbound.sh   also measures Debian's postfix under the same load: it
#     INSTALLS postfix and REWRITES this machine's postfix configuration (bench.example delivered
#     to the local user `inbox`), so only use it on a throwaway machine.
# Load from postfix's smtp-source (taken from the Debian package with `apt-get download`).
set -euo pipefail
cd "$(dirname "$0")/.."
MESSAGES=${MESSAGES:-20000}
SESSIONS=${SESSIONS:-16}
SIZE=${SIZE:-10240}
source benches/common.sh
postfix_tools
SOURCE=$POSTFIX_TOOLS/smtp-source
bench_data inbound
DNS_PORT=5398
start_sender_dns $DNS_PORT
# All the load comes from 127.0.0.1, standing for many senders: lift the per-address byte budget
# (256 MB a minute by default), which two runs of 200 MB exceed.
EDGEMAIL_SMTP_MAX_BYTES_PER_IP_PER_MINUTE=0 start_server --nameserver 127.0.0.1:$DNS_PORT
AUTH="Authorization: Bearer $KEY"
# inbox: the spam filter on (its model trained on the SpamAssassin development corpus when it is
# there, so every message is scored for real) and a Sieve script that runs on every message;
# unfiltered: both off, the second row.
for box in inbox unfiltered; do
  curl -sf -o /dev/null -X POST "http://$HTTP/v1/mailboxes" -H "$AUTH" \
    -H 'Content-Type: application/json' -d "{\"address\":\"$box\"}"
done
curl -sf -o /dev/null -X PATCH "http://$HTTP/v1/mailboxes/unfiltered@bench.example" -H "$AUTH" \
  -H 'Content-Type: application/json' -d '{"spamFilter":{"enabled":false}}'
SIEVE='require [\"fileinto\", \"imap4flags\", \"envelope\"];\nif header :contains \"subject\" \"invoice\" { fileinto \"Archive\"; }\nelsif envelope :domain :is \"from\" \"partner.example\" { addflag \"\\\\Flagged\"; }\nelsif size :over 1M { addflag \"big\"; }'
curl -sf -o /dev/null -X PUT "http://$HTTP/v1/mailboxes/inbox@bench.example/sieve" -H "$AUTH" \
  -H 'Content-Type: application/json' -d "{\"script\":\"$SIEVE\"}"
CORPUS="${SPAM_CORPUS:-../shared/corpus/spamassassin-dev.tar.gz}"
[ -f "$CORPUS" ] || CORPUS=/work/shared/corpus/spamassassin-dev.tar.gz
if [ -f "$CORPUS" ]; then
  mkdir -p "$DATA/corpus"
  tar xzf "$CORPUS" -C "$DATA/corpus"
  $BIN train --global --data "$DATA" --spam "$DATA/corpus/spamassassin-dev/spam" \
    --ham "$DATA/corpus/spamassassin-dev/ham"
fi
# blast MAILBOX: the load into one mailbox; prints "... MS ms: RATE messages/s".
# Then, on a line of its own, the server's CPU a message by thread (where the time goes).
blast() {
  local start end before
  before=$(thread_ticks "$SERVER")
  start=$(date +%s%3N)
  # -s sessions in parallel, -m messages in all, -l message size; one recipient each.
  "$SOURCE" -s "$SESSIONS" -m "$MESSAGES" -l "$SIZE" -f bench@sender.test -t "$1@bench.example" "$SMTP"
  end=$(date +%s%3N)
  echo "$MESSAGES messages in $(( end - start )) ms: $(( MESSAGES * 1000 / (end - start) )) messages/s"
  thread_split "$MESSAGES" "$before" "$(thread_ticks "$SERVER")"
}
echo "== $MESSAGES messages of $SIZE bytes over $SESSIONS connections to $SMTP, spam filter and Sieve on"
echo "accepted $(blast inbox)"
echo "== the same into a mailbox with neither"
echo "unfiltered: accepted $(blast unfiltered)"
FOLDERS=$(curl -sf "http://$HTTP/v1/mailboxes/inbox@bench.example/folders" -H "$AUTH" | tr '{' '\n' |
  sed -n 's/.*"name":"\([^"]*\)".*"total":\([0-9]*\).*/\1 \2/p' | grep -v ' 0$' | paste -sd, -)
echo "inbox@bench.example holds: $FOLDERS; server warnings: $(grep -c -v -E '^(listening|ready)' "$DATA/server.log" || true)"

# The spam filter's cost: real messages (the SpamAssassin development corpus, ham and spam, sent
# by benches/smtp_blast.rs) into a mailbox with the filter on, its model trained on that corpus
# (`edgemail train --global`, so it scores every message for real), and into one with the
# filter off, in turn $FILTER_ROUNDS (3) times each, compared by their medians. FILTER=0 skips it.
if [ "${FILTER:-1}" = 1 ]; then
  [ -d "$DATA/corpus/spamassassin-dev" ] || { echo "no corpus at $CORPUS" >&2; exit 1; }
  MAIL_DIR="$DATA/corpus/spamassassin-dev"
  cargo build --release --quiet --example smtp-blast
  BLAST=target/release/examples/smtp-blast
  for box in filtered plain; do
    curl -sf -o /dev/null -X POST "http://$HTTP/v1/mailboxes" -H "Authorization: Bearer $KEY" \
      -H 'Content-Type: application/json' -d "{\"address\":\"$box\"}"
  done
  curl -sf -o /dev/null -X PATCH "http://$HTTP/v1/mailboxes/plain@bench.example" \
    -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
    -d '{"spamFilter":{"enabled":false}}'
  FILTER_MESSAGES=${FILTER_MESSAGES:-5000}
  ON=""; OFF=""
  for round in $(seq "${FILTER_ROUNDS:-3}"); do
    for box in plain filtered; do
      echo "== round $round: $FILTER_MESSAGES corpus messages to $box@bench.example"
      OUT_LINE=$("$BLAST" "$SMTP" "$SESSIONS" "$FILTER_MESSAGES" bench@sender.test \
        "$box@bench.example" "$MAIL_DIR/ham" "$MAIL_DIR/spam")
      echo "$OUT_LINE"
      RATE=$(echo "$OUT_LINE" | sed -n 's/.*: \([0-9]*\) messages\/s/\1/p')
      if [ "$box" = plain ]; then OFF="$OFF $RATE"; else ON="$ON $RATE"; fi
    done
  done
  med() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
  JUNKED=$(curl -sf "http://$HTTP/v1/mailboxes/filtered@bench.example/folders" \
    -H "Authorization: Bearer $KEY" | tr '{' '\n' | sed -n 's/.*"name":"junk".*"total":\([0-9]*\).*/\1/p')
  echo "filter on: $(echo "$ON" | med) messages/s (rounds$ON); filter off: $(echo "$OFF" | med) messages/s (rounds$OFF); filed as junk with the filter on: ${JUNKED:-?}"
fi

# Stops postfix and drops its queue and the benchmark mailbox's contents.
postfix_stop_and_empty() {
  postfix stop >/dev/null 2>&1 || true
  postsuper -d ALL >/dev/null 2>&1 || true
  : >/var/mail/inbox 2>/dev/null || true
}
if [ "${POSTFIX:-0}" = 1 ]; then
  if ! command -v postfix >/dev/null; then
    echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
    DEBIAN_FRONTEND=noninteractive apt-get install -y postfix >/dev/null
  fi
  [ -f /etc/postfix/main.cf ] || cp /usr/share/postfix/main.cf.debian /etc/postfix/main.cf
  id inbox >/dev/null 2>&1 || useradd -m inbox
  postconf -e 'myhostname=mx.bench.local' 'mydestination=bench.example, localhost' \
    'inet_interfaces=loopback-only' 'inet_protocols=ipv4' 'mynetworks=127.0.0.0/8' \
    'smtpd_recipient_restrictions=permit_mynetworks,reject_unauth_destination' 'alias_maps=' \
    'alias_database=' 'maillog_file=/var/log/postfix.log' 'compatibility_level=3.6' \
    'default_process_limit=100' 'mailbox_size_limit=0'
  # A clean start: no queue left from an earlier run, an empty mailbox. With the default 50 MB
  # mailbox limit, 20,000 10 KB messages overflowed it and postfix spent the run bouncing them.
  postfix_stop_and_empty
  postfix start >/dev/null 2>&1
  sleep 1
  echo
  echo "== postfix $(postconf -h mail_version): the same load to 127.0.0.1:25 (queued durably before 250; no SPF/DKIM/DMARC checks)"
  START=$(date +%s%3N)
  "$SOURCE" -s "$SESSIONS" -m "$MESSAGES" -l "$SIZE" -f bench@sender.test -t inbox@bench.example 127.0.0.1:25
  END=$(date +%s%3N)
  ELAPSED=$(( END - START ))
  echo "postfix accepted $MESSAGES messages in ${ELAPSED} ms: $(( MESSAGES * 1000 / ELAPSED )) messages/s"
  # Stopped, so that it does not deliver its queue while later benchmarks run, and cleaned up.
  postfix_stop_and_empty
fi
