#!/usr/bin/env bash
# IMAP at scale (issue 40, item 4), over implicit TLS, the load from benches/imap_idle.rs:
#   fetch     UID FETCH 1:* (BODY.PEEK[HEADER]) on an INBOX of $MESSAGES (10,000) 2 KB messages
#             filled over inbound SMTP, one session, median of $ROUNDS (5); FETCH 1:* (FLAGS
#             ENVELOPE) alongside, for reference
#   crowd     the server's RSS with $SESSIONS (10,000) sessions logged in (one mailbox), INBOX
#             selected, in IDLE; against its RSS just before they came; its CPU while they idle
#   fanout    with the crowd still held: $DELIVERIES (20) messages, one at a time, delivered over
#             inbound SMTP to a mailbox with $FANOUT (100) sessions in IDLE, each session's
#             `* N EXISTS` timed from the SMTP end-of-data answer: p50/p99/max over all
#   stress    imaptest stress against Dovecot in the same run (benches/imap-stress.sh; STRESS=0
#             skips it, CLIENTS and SECS pass through)
#   bash benches/imap-scale.sh
#   PROFILE=1 bash benches/imap-scale.sh     (also writes benches/profiles/imap-*.txt: perf's
#                                             top functions of the server in each phase)
# Prints `row|measure|measured|reference|target|met` lines (benches/ratios.sh turns them into
# its table rows), then the rows as a table; exits 1 when a target is missed.
set -euo pipefail
cd "$(dirname "$0")/.."
SESSIONS=${SESSIONS:-10000}
FANOUT=${FANOUT:-100}
DELIVERIES=${DELIVERIES:-20}
MESSAGES=${MESSAGES:-10000}
ROUNDS=${ROUNDS:-5}
STRESS=${STRESS:-1}
PROFILE=${PROFILE:-0}
# Each session is a socket on both ends (server and load generator are separate processes).
ulimit -n "$(ulimit -Hn)"
[ "$(ulimit -n)" -gt $((SESSIONS + FANOUT + 200)) ] || { echo "ulimit -n too low for $SESSIONS sessions" >&2; exit 1; }
cargo build --release --quiet --bin edgemail --example imap-idle
LOAD=$PWD/target/release/examples/imap-idle
source benches/common.sh
postfix_tools
bench_data imap-scale
ROWS=$DATA/rows
MISSED=0
row() {
  echo "row|$1|$2|$3|$4|$5" | tee -a "$ROWS"
  [ "$5" = yes ] || MISSED=1
}
meets() { [ "$(echo "$1 $2 $3" | bc -l)" = 1 ] && echo yes || echo no; }
median() { tr ' ' '\n' | grep . | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
# The CPU seconds (user + system) a process has used.
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }
# profile NAME COMMAND...: runs COMMAND; with PROFILE=1 under `perf record` of the server, whose
# top 15 functions (self time) go to benches/profiles/NAME.txt.
profile() {
  local name=$1
  shift
  if [ "$PROFILE" != 1 ]; then "$@"; return; fi
  perf record -q -F 499 -g -p "$SERVER" -o "$DATA/$name.perf" 2>/dev/null &
  local perf=$!
  sleep 0.5
  "$@"
  kill -INT "$perf"; wait "$perf" 2>/dev/null || true
  mkdir -p benches/profiles
  { echo "# $name: perf record -F 499 -g of the server, commit $(git rev-parse --short HEAD); self time"
    perf report -i "$DATA/$name.perf" --stdio --no-children -g none --sort dso,symbol 2>/dev/null \
      | grep -E '^ +[0-9]' | sed -n '1,15p' | sed 's/[ -]*$//'; } >"benches/profiles/$name.txt"
}

DNS_PORT=5398
start_sender_dns $DNS_PORT
# Every session comes from 127.0.0.1: the per-address cap is lifted, as is the listener's.
EDGEMAIL_LOG_LEVEL=warn EDGEMAIL_IMAP_MAX_CONNECTIONS=$((SESSIONS + FANOUT + 100)) \
  EDGEMAIL_IMAP_MAX_CONNECTIONS_PER_IP=$((SESSIONS + FANOUT + 100)) \
  start_server --nameserver 127.0.0.1:$DNS_PORT --imaps 127.0.0.1:0
IMAPS=$(sed -n 's/.* imaps=\([^ ]*\).*/\1/p' "$DATA/server.log")
AUTH="Authorization: Bearer $KEY"
# A mailbox and an app password; prints the password.
mailbox() {
  curl -sf -o /dev/null -X POST "http://$HTTP/v1/mailboxes" -H "$AUTH" -H 'Content-Type: application/json' \
    -d "{\"address\":\"$1\"}"
  curl -sf -X POST "http://$HTTP/v1/mailboxes/$1@bench.example/passwords" -H "$AUTH" \
    -H 'Content-Type: application/json' -d '{"name":"bench"}' | sed -n 's/.*"password":"\([^"]*\)".*/\1/p'
}

echo "== fetch: $MESSAGES messages of 2 KB into fetch@bench.example over inbound SMTP"
PASS=$(mailbox fetch)
"$POSTFIX_TOOLS/smtp-source" -s 16 -m "$MESSAGES" -l 2048 -f bench@sender.test -t fetch@bench.example "$SMTP"
profile imap-fetch-headers "$LOAD" fetch "$IMAPS" fetch@bench.example "$PASS" "$MESSAGES" "$ROUNDS" | tee "$DATA/fetch.txt"
HEADERS=$(awk '/^headers/ {print $(NF-1)}' "$DATA/fetch.txt" | median)
ENVELOPES=$(awk '/^envelopes/ {print $(NF-1)}' "$DATA/fetch.txt" | median)
ALL=$(awk '/^headers/ {printf "%s%s", sep, $(NF-1); sep=" / "}' "$DATA/fetch.txt")
row "IMAP UID FETCH 1:* (BODY.PEEK[HEADER]), $MESSAGES messages" "$HEADERS s (median of $ALL)" \
  "FETCH 1:* (FLAGS ENVELOPE): $ENVELOPES s" "< 0.3 s" "$(meets "$HEADERS" '<' 0.3)"

echo "== crowd: $SESSIONS sessions in IDLE"
PASS=$(mailbox crowd)
BEFORE=$(rss_mb "$SERVER")
"$LOAD" hold "$IMAPS" crowd@bench.example "$PASS" "$SESSIONS" >"$DATA/hold.txt" 2>&1 &
HOLD=$!
PIDS="$PIDS $HOLD"
for _ in $(seq 600); do
  grep -q "^holding $SESSIONS of" "$DATA/hold.txt" && break
  kill -0 "$HOLD" 2>/dev/null || break
  sleep 0.5
done
cat "$DATA/hold.txt"
sleep 5
CPU0=$(cpu_s "$SERVER")
RSSES=""
for _ in 1 2 3 4 5; do RSSES="$RSSES $(rss_mb "$SERVER")"; sleep 2; done
CPU1=$(cpu_s "$SERVER")
profile imap-idle-crowd sleep 10
HELD=$(sed -n 's/^holding \([0-9]*\) of.*/\1/p' "$DATA/hold.txt" | tail -n 1)
RSS=$(echo "$RSSES" | median)
CPU=$(printf "%.0f" "$(echo "($CPU1 - $CPU0) * 100 / 10" | bc -l)")
OK=$([ "${HELD:-0}" = "$SESSIONS" ] && [ "$(meets "$RSS" '<' 300)" = yes ] && echo yes || echo no)
row "IMAP: $SESSIONS logged-in sessions in IDLE" "RSS $RSS MB, ${HELD:-0} held; server CPU $CPU % of a core while they idle" \
  "RSS $BEFORE MB before they came" "RSS < 300 MB, all held" "$OK"

echo "== fan-out: $DELIVERIES deliveries to $FANOUT IDLE sessions, $SESSIONS more held"
PASS=$(mailbox fan)
profile imap-idle-fanout "$LOAD" fanout "$IMAPS" fan@bench.example "$PASS" "$FANOUT" "$SMTP" \
  bench@sender.test fan@bench.example "$DELIVERIES" | tee "$DATA/fanout.txt" || true
read -r P50 P99 MAX < <(sed -n 's/.*p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms, max \([0-9.]*\) ms/\1 \2 \3/p' "$DATA/fanout.txt")
HELD=$(sed -n 's/^holding \([0-9]*\) of.*/\1/p' "$DATA/hold.txt" | tail -n 1)
row "IMAP: delivery announced to $FANOUT IDLE sessions" \
  "p50 ${P50:-?} ms, p99 ${P99:-?} ms, max ${MAX:-?} ms ($DELIVERIES deliveries)" \
  "while ${HELD:-0} other sessions idle" "p99 < 100 ms" "$(meets "${P99:-1000000}" '<' 100)"
kill "$HOLD" "$SERVER" 2>/dev/null || true

if [ "$STRESS" = 1 ]; then
  echo "== imaptest stress against Dovecot (benches/imap-stress.sh)"
  bash benches/imap-stress.sh | tee "$DATA/stress.txt"
  for profile in checkpoint=5 default logout=0; do
    read -r OURS OUR_ERR < <(awk -v p="$profile" '$1 == "edgemail" && $2 == p {print $3, $5}' "$DATA/stress.txt")
    read -r DOVE DOVE_ERR < <(awk -v p="$profile" '$1 == "dovecot" && $2 == p {print $3, $5}' "$DATA/stress.txt")
    RATIO=$(printf "%.2f" "$(echo "${OURS:-0} / ${DOVE:-1}" | bc -l)")
    OK=$([ "$(meets "$RATIO" '>=' 1)" = yes ] && [ "${OUR_ERR:-1}" = 0 ] && echo yes || echo no)
    row "imaptest stress ($profile), ${CLIENTS:-10} clients" "${OURS:-?} ops/s, ${OUR_ERR:-?} errors" \
      "Dovecot ${DOVE:-?} ops/s, ${DOVE_ERR:-?} errors (ratio $RATIO)" "ratio >= 1, no errors" "$OK"
  done
fi

echo
echo "commit $(git rev-parse --short HEAD), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
echo '| Measure | Measured | Reference in the same run | Target | Met |'
echo '| --- | --- | --- | --- | --- |'
awk -F'|' '{printf "| %s | %s | %s | %s | %s |\n", $2, $3, $4, $5, $6}' "$ROWS"
exit $MISSED
