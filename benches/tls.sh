#!/usr/bin/env bash
# New TLS sessions per second on edgemail's implicit-TLS listeners (IMAPS, submissions, HTTPS)
# against a bare tokio-rustls server with the same certificate type, provider, protocol versions
# and session resumption (benches/bare_tls.rs), under the same load (benches/tls_handshakes.rs:
# $CONCURRENCY clients, each connecting again as soon as its session ended):
#   bash benches/tls.sh
#   ROUNDS=5 TLS_SECONDS=5 CONCURRENCY=16 bash benches/tls.sh
# Each listener is measured with full handshakes and with resumed ones (each client keeps its
# tickets), edgemail and the reference alternately, $ROUNDS times (5), each round's pair giving a
# ratio; the median of those ratios is held against the target.
# Each measurement also gives the server's CPU time per session (from /proc), which the client's
# own share of the two cores does not blur. Ends with one line per listener,
#   tls-row<TAB>measure<TAB>measured<TAB>reference<TAB>target<TAB>met
# which benches/ratios.sh puts in its table; exits 1 when a target is missed.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
TLS_SECONDS=${TLS_SECONDS:-5}
# Under the default per-address cap of the mail listeners (20): the load comes from 127.0.0.1.
CONCURRENCY=${CONCURRENCY:-16}
TARGET=0.8
cargo build --release --quiet --bin edgemail --example bare-tls --example tls-handshakes
LOAD=target/release/examples/tls-handshakes
# The binary just built: bench_data's own `cargo build` (without the examples' dev-dependencies)
# would build the library again with other features.
export BENCH_BIN=${BENCH_BIN:-$PWD/target/release/edgemail}
source benches/common.sh
bench_data tls
start_server --imaps 127.0.0.1:0 --submissions 127.0.0.1:0 --https 127.0.0.1:0
target/release/examples/bare-tls >"$DATA/bare.addr" &
BARE_PID=$!
PIDS="$PIDS $BARE_PID"
for _ in $(seq 50); do grep -q listening "$DATA/bare.addr" && break; sleep 0.1; done
# addr FILE NAME: the address a `listening` line gives NAME.
addr() { grep -o "$2=[^ ]*" "$1" | head -n 1 | cut -d= -f2; }
# cpu PID: the process's user + system time so far, in clock ticks.
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
TICK_US=$(( 1000000 / $(getconf CLK_TCK) ))

# measure SIDE PID ADDR MODE GREETING: one run of the load; appends its rate and CPU per session
# to $OUT/SIDE-NAME-MODE.rate and .cpu.
OUT=$DATA/results
mkdir -p "$OUT"
measure() {
  local side=$1 pid=$2 addr=$3 mode=$4 greeting=$5 name=$6 before after line rate sessions
  before=$(cpu "$pid")
  line=$("$LOAD" "$addr" "$mode" "$greeting" "$TLS_SECONDS" "$CONCURRENCY")
  after=$(cpu "$pid")
  echo "$side $name $mode: $line"
  rate=$(echo "$line" | sed -n 's/.*rate=\([0-9]*\)\/s.*/\1/p')
  sessions=$(echo "$line" | sed -n 's/^sessions=\([0-9]*\) .*/\1/p')
  echo "$rate" >>"$OUT/$side-$name-$mode.rate"
  echo $(( (after - before) * TICK_US / (sessions > 0 ? sessions : 1) )) >>"$OUT/$side-$name-$mode.cpu"
  echo "$line" | sed -n 's/.*resumed=\([0-9.]*\)%.*/\1/p' >>"$OUT/$side-$name-$mode.resumed"
  echo "$line" | sed -n 's/.*errors=\([0-9]*\).*/\1/p' >>"$OUT/$side-$name-$mode.errors"
}

LISTENERS="imaps:greeting submissions:greeting https:silent"
for round in $(seq "$ROUNDS"); do
  echo "== TLS handshakes, round $round of $ROUNDS ($CONCURRENCY clients, ${TLS_SECONDS}s each)"
  for entry in $LISTENERS; do
    name=${entry%%:*}; greeting=${entry##*:}
    ours=$(addr "$DATA/server.log" "$name"); bare=$(addr "$DATA/bare.addr" "$name")
    for mode in full resumed; do
      # Who goes first alternates, so a machine getting busier or quieter favours neither.
      if [ $((round % 2)) = 1 ]; then
        measure edgemail "$SERVER" "$ours" "$mode" "$greeting" "$name"
        measure bare "$BARE_PID" "$bare" "$mode" "$greeting" "$name"
      else
        measure bare "$BARE_PID" "$bare" "$mode" "$greeting" "$name"
        measure edgemail "$SERVER" "$ours" "$mode" "$greeting" "$name"
      fi
    done
  done
done

median() { sort -n "$1" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
all() { paste -sd/ "$1" | sed 's/\// \/ /g'; }
sum() { awk '{s += $1} END {print s + 0}' "$1"; }
ratio() { printf "%.2f" "$(echo "$1 / $2" | bc -l)"; }
MISSED=0
for entry in $LISTENERS; do
  name=${entry%%:*}
  measured=""; reference=""; ok=yes
  for mode in full resumed; do
    e=$OUT/edgemail-$name-$mode; b=$OUT/bare-$name-$mode
    # The ratio is the median of each round's pair: the two runs of a pair are seconds apart,
    # while the machine's pace moves by 2x from one minute to the next when others build.
    paste "$e.rate" "$b.rate" | awk '{printf "%.2f\n", $1 / $2}' >"$e.ratio"
    r=$(median "$e.ratio")
    measured="$measured$mode $(median "$e.rate")/s ($(all "$e.rate")), $(median "$e.cpu") us CPU each; "
    reference="$reference$mode $(median "$b.rate")/s ($(all "$b.rate")), $(median "$b.cpu") us CPU each, ratio $r ($(all "$e.ratio")); "
    [ "$(echo "$r >= $TARGET" | bc -l)" = 1 ] || ok=no
    # Resumption must have happened (the first session of each client is a full one), and no
    # session may fail on either side.
    if [ "$mode" = resumed ] && [ "$(echo "$(median "$e.resumed") < 95" | bc -l)" = 1 ]; then ok=no; fi
    [ "$(sum "$e.errors")" = 0 ] && [ "$(sum "$b.errors")" = 0 ] || ok=no
  done
  errors=$(( $(sum "$OUT/edgemail-$name-full.errors") + $(sum "$OUT/edgemail-$name-resumed.errors") ))
  measured="${measured}resumed $(median "$OUT/edgemail-$name-resumed.resumed")%, $errors errors"
  [ "$ok" = yes ] || MISSED=1
  printf 'tls-row\tNew TLS sessions, %s, %s clients\t%s\tbare tokio-rustls: %s\tratio >= %s, full and resumed\t%s\n' \
    "$name" "$CONCURRENCY" "$measured" "${reference%; }" "$TARGET" "$ok"
done
exit $MISSED
