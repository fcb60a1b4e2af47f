# Shared set-up of the shell benchmarks (sourced, not run). Everything listens on 127.0.0.1.
# Callers set PIDS="" and kill $PIDS on exit.

# Postfix's smtp-sink and smtp-source, taken from the Debian package (not installed).
POSTFIX_TOOLS=/tmp/postfix-bench/usr/sbin
postfix_tools() {
  command -v dnsmasq >/dev/null || apt-get install -y dnsmasq-base >/dev/null
  if [ ! -x "$POSTFIX_TOOLS/smtp-sink" ]; then
    (cd /tmp && apt-get download postfix >/dev/null && dpkg -x postfix_*.deb /tmp/postfix-bench)
  fi
  export LD_LIBRARY_PATH=/tmp/postfix-bench/usr/lib/postfix
}

# dnsmasq on port $1 answering MX bench.test -> mx.bench.test -> 127.0.0.1, with a TTL of five
# minutes as real MX records have (minutes to hours); dnsmasq gives its own records a TTL of 0
# unless told, which made every delivery and every screened recipient ask the DNS again.
start_mx_dns() {
  dnsmasq --no-daemon --keep-in-foreground --port="$1" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --local-ttl=300 --mx-host=bench.test,mx.bench.test,10 --address=/mx.bench.test/127.0.0.1 \
    --log-facility=/dev/null &
  PIDS="$PIDS $!"
}

# dnsmasq on port $1 answering the SPF and DMARC records of sender.test, the sender of the
# inbound benchmarks, with the same five-minute TTL, so the server's resolver caches them as it
# would real ones (at dnsmasq's default of 0 every message asked the DNS twice).
start_sender_dns() {
  dnsmasq --no-daemon --keep-in-foreground --port="$1" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --local-ttl=300 --txt-record=sender.test,"v=spf1 ip4:127.0.0.1 -all" \
    --txt-record=_dmarc.sender.test,"v=DMARC1; p=none" --log-facility=/dev/null 2>/dev/null &
  PIDS="$PIDS $!"
}

# smtp-sink on port $1 (pipelining on, a backlog of 1000 connections).
start_sink() {
  "$POSTFIX_TOOLS/smtp-sink" -u "$(id -un)" "127.0.0.1:$1" 1000 &
  SINK=$!
  PIDS="$PIDS $SINK"
}

# cpu_ticks PID: the CPU time (user + system, in clock ticks) process PID used so far.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# thread_ticks PID: "name ticks" for each thread name of process PID (numbered threads such as
# dkim-0 and dkim-1 summed under one name).
thread_ticks() {
  cat /proc/"$1"/task/*/stat 2>/dev/null |
    awk '{sub(/-[0-9]+\)$/, ")", $2); t[$2] += $14 + $15} END {for (n in t) print n, t[n]}'
}
# thread_split N BEFORE AFTER: the CPU a message of each thread name between two thread_ticks,
# over N messages, on one line.
thread_split() {
  { echo "$2" | sed 's/^/0 /'; echo "$3" | sed 's/^/1 /'; } |
    awk -v n="$1" -v t="$(getconf CLK_TCK)" '{ v[$2] += ($1 == 1 ? $3 : -$3) }
      END { printf "server CPU a message by thread:"
        for (k in v) if (v[k] > 0) printf " %s %.3f ms", k, v[k] * 1000 / t / n; print "" }'
}

# A release build (or the binary $BENCH_BIN, say an older build for a before/after figure) and a
# throwaway data directory ($DATA) with domain bench.example and an API key ($KEY); on exit every
# process in $PIDS is stopped and $DATA removed. $1 names the bench.
bench_data() {
  [ -n "${BENCH_BIN:-}" ] || cargo build --release --quiet
  BIN=${BENCH_BIN:-target/release/edgemail}
  DATA=$(mktemp -d "/tmp/edgemail-$1.XXXXXX")
  PIDS=""
  trap 'kill $PIDS 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DATA"' EXIT
  $BIN domain add bench.example --data "$DATA" >/dev/null
  KEY=$($BIN key create --name bench --domain bench.example --data "$DATA" | tail -n 1)
}

# `edgemail serve` on $DATA, HTTP and SMTP on free ports, with the arguments given (settings come
# from the caller's environment); waits until it is ready, then sets SERVER (its pid), HTTP and
# SMTP (its addresses).
start_server() {
  # The sink and the DNS answer on 127.0.0.1, a destination production refuses.
  EDGEMAIL_DELIVERY_ALLOW_PRIVATE=true $BIN serve --data "$DATA" --http 127.0.0.1:0 --smtp 127.0.0.1:0 "$@" 2>"$DATA/server.log" &
  SERVER=$!
  PIDS="$PIDS $SERVER"
  for _ in $(seq 100); do grep -q '^ready$' "$DATA/server.log" && break; sleep 0.1; done
  HTTP=$(sed -n 's/^listening http=\([^ ]*\).*/\1/p' "$DATA/server.log")
  SMTP=$(sed -n 's/.* smtp=\([^ ]*\).*/\1/p' "$DATA/server.log")
}
