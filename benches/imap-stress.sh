#!/usr/bin/env bash
# imaptest's stress mode (Dovecot's IMAP load and consistency tester) against edgemail and
# against Dovecot (Debian's dovecot-imapd, set up here as a throwaway instance on 127.0.0.1) in
# the same run, with the same settings, one after the other; prints each server's operations
# per second and imaptest's error count. Three profiles, as issue 34 names them: the default
# mix, `logout=0` (sessions stay logged in), and `checkpoint=5` (every 5 s all clients stop and
# compare their views of the mailbox). STRESS_LOGS=DIR keeps imaptest's output.
#   bash benches/imap-stress.sh        (CLIENTS=10 SECS=30 to change; PROFILE=1 also writes
#                                      benches/profiles/imap-stress.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
CLIENTS=${CLIENTS:-10}
SECS=${SECS:-30}
source benches/common.sh

peers=${IMAPTEST_PEERS:-$(cd .. && pwd)/shared/peers}
[ -d "$peers" ] || peers=/work/shared/peers
IMAPTEST=$("$peers/imaptest/build.sh" | tail -1)
MBOX=$(dirname "$IMAPTEST")/tests/default.mbox
dpkg -s dovecot-imapd >/dev/null 2>&1 ||
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dovecot-imapd >/dev/null

bench_data imap-stress
EDGEMAIL_LOG_LEVEL=warn start_server --imaps 127.0.0.1:0
IMAPS=$(sed -n 's/.* imaps=\([^ ]*\).*/\1/p' "$DATA/server.log")
BASE=http://$HTTP
AUTH="Authorization: Bearer $KEY"
curl -sf -o /dev/null -X POST "$BASE/v1/mailboxes" -H "$AUTH" -H 'Content-Type: application/json' \
  -d '{"address":"stress"}'
PASSWORD=$(curl -sf -X POST "$BASE/v1/mailboxes/stress@bench.example/passwords" -H "$AUTH" \
  -H 'Content-Type: application/json' -d '{"name":"bench"}' | sed -n 's/.*"password":"\([^"]*\)".*/\1/p')

# Dovecot: its own config, certificate, users file and mail under $DATA/dovecot.
DOVE=$DATA/dovecot
mkdir -p "$DOVE/mail" "$DOVE/run"
# Dovecot's auth and mail processes run as its own users and nobody: they must reach the files.
chmod 755 "$DATA" "$DOVE"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost \
  -keyout "$DOVE/key.pem" -out "$DOVE/cert.pem" 2>/dev/null
chown -R nobody:"$(id -g nobody)" "$DOVE/mail"
DOVE_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "stress@bench.example:{PLAIN}$PASSWORD:$(id -u nobody):$(id -g nobody)::$DOVE/mail/%d/%n" >"$DOVE/users"
cat >"$DOVE/dovecot.conf" <<CONF
base_dir = $DOVE/run
protocols = imap
listen = 127.0.0.1
log_path = $DOVE/dovecot.log
ssl = required
ssl_cert = <$DOVE/cert.pem
ssl_key = <$DOVE/key.pem
disable_plaintext_auth = yes
auth_mechanisms = plain
passdb {
  driver = passwd-file
  args = $DOVE/users
}
userdb {
  driver = passwd-file
  args = $DOVE/users
}
mail_location = maildir:~/Maildir
first_valid_uid = 1
service imap-login {
  inet_listener imap {
    port = 0
  }
  inet_listener imaps {
    address = 127.0.0.1
    port = $DOVE_PORT
  }
}
CONF
dovecot -c "$DOVE/dovecot.conf"
trap 'kill $PIDS 2>/dev/null || true; dovecot -c "$DOVE/dovecot.conf" stop 2>/dev/null || true; [ -z "${STRESS_LOGS:-}" ] || cp "$DOVE/dovecot.log" "$STRESS_LOGS/" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$DATA"' EXIT
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$DOVE_PORT) 2>/dev/null && break; sleep 0.1; done

# One stress run: prints "ops/s errors" from imaptest's output.
stress() {
  local port=$1 label=$2
  shift 2
  local log=${STRESS_LOGS:-$DATA}/stress-$label-${*:-default}.log
  timeout $((SECS + 60)) "$IMAPTEST" host=127.0.0.1 port="$port" ssl=any-cert user=stress@bench.example \
    pass="$PASSWORD" mbox="$MBOX" clients="$CLIENTS" secs="$SECS" "$@" >"$log" 2>&1 || true
  # The totals line follows the column header: one number per operation kind.
  local ops errors
  # After "Totals:" come the header, the percentage lines, then the counts: the first line of
  # numbers only.
  ops=$(awk '/^Totals:/{t=1; next} t && /^[ 0-9]+$/{s=0; for(i=1;i<=NF;i++) s+=$i; print s; t=0}' "$log")
  errors=$(grep -c -E '^Error:|^Panic' "$log" || true)
  printf '%-9s %-14s %10.1f ops/s %6s errors\n' "$label" "${*:-default}" "$(echo "${ops:-0} / $SECS" | bc -l)" "$errors"
  [ "$errors" = 0 ] || grep -m3 -E '^Error:' "$log" | cut -c1-160 | sed 's/^/    /'
}

echo "== imaptest stress: $CLIENTS clients, $SECS s each, mailbox default.mbox"
# checkpoint first: imaptest 924f619 itself can panic (array.c) in a checkpoint run on a mailbox
# earlier runs left, against Dovecot as well.
for profile in "checkpoint=5" "" "logout=0"; do
  # PROFILE=1: perf's top functions of edgemail under the default mix go to benches/profiles/.
  if [ "${PROFILE:-0}" = 1 ] && [ -z "$profile" ]; then
    perf record -q -F 499 -g -p "$SERVER" -o "$DATA/stress.perf" 2>/dev/null &
    PERF=$!
  fi
  # shellcheck disable=SC2086
  stress "${IMAPS##*:}" edgemail $profile
  if [ -n "${PERF:-}" ]; then
    kill -INT "$PERF"; wait "$PERF" 2>/dev/null || true; PERF=""
    mkdir -p benches/profiles
    { echo "# imaptest stress (default mix, $CLIENTS clients): perf record -F 499 -g of edgemail, commit $(git rev-parse --short HEAD); self time"
      perf report -i "$DATA/stress.perf" --stdio --no-children -g none --sort dso,symbol 2>/dev/null \
        | grep -E '^ +[0-9]' | sed -n '1,15p' | sed 's/[ -]*$//'; } >benches/profiles/imap-stress.txt
  fi
  # shellcheck disable=SC2086
  stress "$DOVE_PORT" dovecot $profile
done
