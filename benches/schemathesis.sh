#!/usr/bin/env bash
# Property-based fuzzing of the HTTP API against schema/openapi.yaml with Schemathesis: the real
# release binary in demo mode on a throwaway data directory.
#   bash benches/schemathesis.sh              # every phase, $MAX_EXAMPLES cases per operation
#   MAX_EXAMPLES=20 bash benches/schemathesis.sh --include-tag webhooks
# Checks: the server never answers 5xx; every status, content type, header and response body is
# the documented one; documented-valid data (and every example) is accepted and invalid data
# refused; wrong methods get 405 with an Allow header. `schemathesis.toml` names the refusals of
# schema-valid requests that depend on stored state (a mailbox that must exist, say). Needs PyPI once (Schemathesis goes into a
# venv), so this is a bench script and not part of CI. Exits non-zero when Schemathesis finds a
# problem or the server panics.
#
# The fuzzer invents webhook URLs and recipient addresses, so the server and the fuzzer run in a
# network namespace of their own with only a loopback interface: nothing they do can leave the
# machine. A dnsmasq in there answers every name with 127.0.0.1 (webhook hosts must resolve), where
# nothing listens on the ports used.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_EXAMPLES=${MAX_EXAMPLES:-50}
VENV=${VENV:-/tmp/edgemail-schemathesis-venv}
if [ ! -x "$VENV/bin/schemathesis" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet schemathesis
fi
command -v dnsmasq >/dev/null || apt-get install -y dnsmasq-base >/dev/null
if [ -z "${BENCH_BIN:-}" ]; then
  cargo build --release --quiet
fi
export REPO=$PWD BIN=${BENCH_BIN:-$PWD/target/release/edgemail} VENV MAX_EXAMPLES SEED=${SEED:-1}
DATA=$(mktemp -d /tmp/edgemail-schemathesis.XXXXXX)
export DATA
trap 'rm -rf "$DATA"' EXIT

# shellcheck disable=SC2016
unshare --net bash -c '
set -euo pipefail
ip link set lo up
dnsmasq --no-daemon --keep-in-foreground --port=53 --listen-address=127.0.0.1 --bind-interfaces \
  --no-resolv --no-hosts --log-facility=/dev/null --address=/#/127.0.0.1 2>/dev/null &
DNS=$!
# The rate limit is lifted so that a fast fuzzer is not answered 429 where the document expects
# something else; mail goes to port 9 of 127.0.0.1 (closed) and is retried later.
EDGEMAIL_API_RATE_PER_SECOND=1000000 EDGEMAIL_API_BURST=1000000 EDGEMAIL_LOG_LEVEL=warn \
EDGEMAIL_TOOLS_RATE_PER_MINUTE=1000000 EDGEMAIL_TOOLS_BURST=1000000 \
EDGEMAIL_DELIVERY_ALLOW_PRIVATE=true EDGEMAIL_WEBHOOKS_ALLOW_PRIVATE=true EDGEMAIL_DELIVERY_PORT=9 \
  "$BIN" serve --demo --data "$DATA" --http 127.0.0.1:0 --smtp 127.0.0.1:0 --nameserver 127.0.0.1:53 \
  >"$DATA/demo.txt" 2>"$DATA/server.log" &
SERVER=$!
trap "kill $SERVER $DNS 2>/dev/null; wait 2>/dev/null || true" EXIT
for _ in $(seq 100); do grep -q "^ready$" "$DATA/server.log" && break; sleep 0.1; done
HTTP=$(sed -n "s/^listening http=\([^ ]*\).*/\1/p" "$DATA/server.log")
KEY=$(sed -n "s/^API key (shown once): //p" "$DATA/demo.txt")
[ -n "$HTTP" ] && [ -n "$KEY" ] || { echo "the demo server did not start:" >&2; cat "$DATA/server.log" >&2; exit 1; }
echo "demo server on $HTTP, $MAX_EXAMPLES cases per operation, seed $SEED"
status=0
# Run from the data directory: Schemathesis keeps a cache of what it found in the current one.
cd "$DATA"
"$VENV/bin/schemathesis" --config-file "$REPO/benches/schemathesis.toml" run "$REPO/schema/openapi.yaml" \
  --url "http://$HTTP" \
  -H "Authorization: Bearer $KEY" \
  --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,negative_data_rejection,positive_data_acceptance,unsupported_method,allow_header_conformance,missing_required_header \
  --mode all \
  --phases examples,coverage,fuzzing \
  --max-examples "$MAX_EXAMPLES" \
  --seed "$SEED" \
  --workers 2 \
  --continue-on-failure \
  "$@" || status=$?
if grep -q panicked "$DATA/server.log"; then
  echo "the server panicked:" >&2
  grep -A3 panicked "$DATA/server.log" >&2
  status=1
fi
exit $status
' schemathesis "$@"
