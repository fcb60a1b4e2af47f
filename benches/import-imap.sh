#!/usr/bin/env bash
# IMAP import speed (issue 41): Debian's Dovecot, in a throwaway directory with a passwd-file user
# and a self-signed certificate, holds $MESSAGES messages of about $SIZE bytes in its INBOX
# (Maildir files written here, as a delivery leaves them); `edgemail import --imap` copies them
# over IMAPS into a mailbox of a running server and the messages per second are printed. A second
# run, which finds nothing new, is timed too.
#   bash benches/import-imap.sh          (MESSAGES=10000 SIZE=2048 to change)
set -euo pipefail
cd "$(dirname "$0")/.."
MESSAGES=${MESSAGES:-10000}
SIZE=${SIZE:-2048}
source benches/common.sh
bench_data import-imap
DOVE="$DATA/dovecot"
mkdir -p "$DOVE/old/cur" "$DOVE/old/new" "$DOVE/old/tmp" "$DOVE/run"
chmod 755 "$DATA" "$DOVE"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$DOVE/key.pem" -out "$DOVE/cert.pem" -days 1 \
  -subj /CN=localhost 2>/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "old:{PLAIN}pw-old:65534:65534::$DOVE/home::userdb_mail=maildir:$DOVE/old" >"$DOVE/passwd"
cat >"$DOVE/dovecot.conf" <<EOF
base_dir = $DOVE/run
state_dir = $DOVE/run
log_path = $DOVE/dovecot.log
protocols = imap
listen = 127.0.0.1
ssl = required
ssl_cert = <$DOVE/cert.pem
ssl_key = <$DOVE/key.pem
default_login_user = dovenull
default_internal_user = dovecot
default_internal_group = dovecot
disable_plaintext_auth = no
passdb {
  driver = passwd-file
  args = $DOVE/passwd
}
userdb {
  driver = passwd-file
  args = $DOVE/passwd
}
service imap-login {
  inet_listener imap {
    port = 0
  }
  inet_listener imaps {
    port = $PORT
  }
  chroot =
}
service anvil {
  chroot =
}
EOF
echo "== seeding Dovecot's INBOX: $MESSAGES messages of about $SIZE bytes"
python3 - "$DOVE/old/cur" "$MESSAGES" "$SIZE" <<'EOF'
import os, sys
cur, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
line = "the quick brown fox jumps over the lazy dog 0123456789\r\n"
body = line * max(1, size // len(line))
for i in range(n):
    text = (f"From: Old <old{i}@example.org>\r\nTo: old@bench.example\r\nSubject: bench {i}\r\n"
            f"Message-ID: <bench-{i}@example.org>\r\nDate: Mon, 5 Jan 2015 10:00:00 +0000\r\n\r\n{body}")
    path = os.path.join(cur, f"{1420452000 + i}.M{i}P1.bench:2,S")
    with open(path, "w") as f:
        f.write(text)
    os.utime(path, (1420452000 + i, 1420452000 + i))
EOF
chown -R 65534:65534 "$DOVE/old"
/usr/sbin/dovecot -c "$DOVE/dovecot.conf"
trap 'kill $PIDS 2>/dev/null || true; /usr/sbin/dovecot -c "$DOVE/dovecot.conf" stop 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DATA"' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done
EDGEMAIL_LOG_LEVEL=warn start_server
curl -sf -o /dev/null -X POST "http://$HTTP/v1/mailboxes" -H "Authorization: Bearer $KEY" \
  -H 'Content-Type: application/json' -d '{"address":"old"}'
echo pw-old >"$DATA/password"
run() {
  $BIN import --mailbox old@bench.example --imap "imaps://old@127.0.0.1:$PORT/" --insecure \
    --password-file "$DATA/password" --data "$DATA"
}
echo "== first import"
START=$(date +%s%3N)
run | tail -n 1
MS=$(( $(date +%s%3N) - START ))
echo "imported $MESSAGES messages in $MS ms: $(( MESSAGES * 1000 / (MS > 0 ? MS : 1) )) msgs/s"
echo "== second import (nothing new)"
START=$(date +%s%3N)
run | tail -n 1
echo "second run in $(( $(date +%s%3N) - START )) ms"
