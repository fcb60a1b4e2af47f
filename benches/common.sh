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

# dnsmasq on port $1 answering MX bench.test -> mx.bench.test -> 127.0.0.1.
start_mx_dns() {
  dnsmasq --no-daemon --keep-in-foreground --port="$1" --listen-address=127.0.0.1 --bind-interfaces \
    --no-resolv --no-hosts --mx-host=bench.test,mx.bench.test,10 --address=/mx.bench.test/127.0.0.1 \
    --log-facility=/dev/null &
  PIDS="$PIDS $!"
}

# smtp-sink on port $1 (pipelining on, a backlog of 1000 connections).
start_sink() {
  "$POSTFIX_TOOLS/smtp-sink" -u "$(id -un)" "127.0.0.1:$1" 1000 &
  PIDS="$PIDS $!"
}
