#!/usr/bin/env bash
# Durable accepted sends per second (POST /v1/send, 1 recipient, wrk, as in benches/send.sh) on
#   (a) one node on the embedded redb file,
#   (b) one node on PostgreSQL,
#   (c) two nodes on the same PostgreSQL, one wrk process driving each at once (rates summed).
# Each run has its own fresh store with domain bench.example and one key; the queue delivers to a
# local smtp-sink meanwhile (recipients at bench.test, MX through a local dnsmasq), as in
# production a node accepts and delivers at once. A throwaway PostgreSQL cluster is started for
# (b) and (c): initdb -A trust (as user postgres when run as root, which PostgreSQL refuses to
# run as), a private port and socket directory, fsync and synchronous_commit at their defaults
# (on), so every run compares durable commits. It is stopped and removed on exit.
#   bash benches/scaleout.sh
#   DURATION=20s CONNECTIONS=64 bash benches/scaleout.sh
# Needs: wrk, dnsmasq and postfix's smtp-sink (see benches/common.sh), PostgreSQL's server
# binaries under /usr/lib/postgresql/*/bin (initdb, pg_ctl, createdb).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
source benches/common.sh
postfix_tools
bench_data scaleout

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$PG_BIN/initdb" ] || { echo "no PostgreSQL server binaries under /usr/lib/postgresql" >&2; exit 1; }
PG_ROOT=$(mktemp -d /tmp/edgemail-scaleout-pg.XXXXXX)
PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
AS=()
if [ "$(id -u)" = 0 ]; then
  AS=(runuser -u postgres --)
  chown postgres "$PG_ROOT"
fi
DIRS="$DATA"
cleanup() {
  kill $PIDS 2>/dev/null || true
  wait 2>/dev/null || true
  [ -f "$PG_ROOT/data/postmaster.pid" ] && "${AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_ROOT/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf $DIRS "$PG_ROOT"
}
trap cleanup EXIT
# STATEMENTS=1: also list each run's most frequent statements (pg_stat_statements; a diagnosis
# that costs a little throughput).
PG_EXTRA=""
if [ "${STATEMENTS:-0}" = 1 ]; then
  PG_EXTRA="-c shared_preload_libraries=pg_stat_statements -c log_parameter_max_length_on_error=48"
fi
"${AS[@]}" "$PG_BIN/initdb" -A trust -U postgres -D "$PG_ROOT/data" >/dev/null
"${AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_ROOT/data" -l "$PG_ROOT/log" -w \
  -o "-p $PG_PORT -k $PG_ROOT -c listen_addresses=127.0.0.1 -c max_connections=200 $PG_EXTRA" start >/dev/null
"${AS[@]}" "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -Atc \
  "select 'postgres ' || current_setting('server_version') || ', fsync=' || current_setting('fsync') || ', synchronous_commit=' || current_setting('synchronous_commit')"

DNS_PORT=5397; SINK_PORT=2597
start_mx_dns $DNS_PORT
start_sink $SINK_PORT

psql_in() { "${AS[@]}" "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "$1" -Atc "$2"; }

# A fresh database on the cluster; prints its URL.
database() {
  "${AS[@]}" "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$1"
  [ "${STATEMENTS:-0}" != 1 ] || psql_in "$1" "create extension pg_stat_statements" >/dev/null
  echo "postgres://postgres@127.0.0.1:$PG_PORT/$1"
}

# What database $1 did, per request wrk completed ($2): transactions committed and rolled back
# (read snapshots end in a rollback too) and rows written.
pg_work() {
  psql_in "$1" "select format('PostgreSQL, database %s: %s commits, %s rollbacks, %s rows written; per request: %s commits, %s rows', datname, xact_commit, xact_rollback, tup_inserted + tup_updated + tup_deleted, round(xact_commit::numeric / greatest($2, 1), 2), round((tup_inserted + tup_updated + tup_deleted)::numeric / greatest($2, 1), 1)) from pg_stat_database where datname = '$1'"
  [ "${STATEMENTS:-0}" != 1 ] || psql_in "$1" "select format('%10s calls %8s ms  %s', calls, round(total_exec_time), left(regexp_replace(query, '\s+', ' ', 'g'), 90)) from pg_stat_statements where dbid = (select oid from pg_database where datname = '$1') order by calls desc limit 12"
}

# A new data directory for a node on PostgreSQL (its admin socket, log and wrk output; the data
# is in the database), in the variable named $1; removed on exit.
node_dir() {
  local dir
  dir=$(mktemp -d /tmp/edgemail-scaleout-node.XXXXXX)
  DIRS="$DIRS $dir"
  printf -v "$1" '%s' "$dir"
}

# Domain bench.example, mailbox news and a key in the store of the data directory $1 (and URL $2
# when on PostgreSQL); sets KEY.
seed() {
  local store=()
  [ -z "${2:-}" ] || store=(--store "$2")
  $BIN domain add bench.example --data "$1" "${store[@]}" >/dev/null
  KEY=$($BIN key create --name bench --domain bench.example --data "$1" "${store[@]}" | tail -n 1)
}

# Starts a node on data directory $1 with the extra serve arguments after it; sets HTTP.
node() {
  DATA=$1
  shift
  EDGEMAIL_API_RATE_PER_SECOND=10000000 EDGEMAIL_API_BURST=10000000 \
  EDGEMAIL_DELIVERY_PORT=$SINK_PORT EDGEMAIL_LOG_LEVEL=warn \
    start_server --nameserver 127.0.0.1:$DNS_PORT "$@"
  [ -n "$HTTP" ] || { echo "the node on $DATA did not start:" >&2; cat "$DATA/server.log" >&2; exit 1; }
}

mailbox() {
  curl -sf -o /dev/null -X POST "http://$1/v1/mailboxes" -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' -d '{"address":"news","displayName":"Bench News"}'
}

# A wrk script sending one message a request, to a distinct recipient; $1 tells the runs apart.
script() {
  cat > "$DATA/send-$1.lua" <<LUA
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"from":"news@bench.example","to":"$1-%d-%d@bench.test","subject":"Hello %d","html":"<p>Hello <b>there</b>, this is message %d.</p>"}', math.random(1, 1000000000), n, n, n)
  return wrk.format("POST", "/v1/send", { ["Authorization"] = "Bearer $KEY", ["Content-Type"] = "application/json" }, body)
end
LUA
  echo "$DATA/send-$1.lua"
}

# Runs wrk with $1 threads and $2 connections against http://$3 with the lua script $4, output
# to file $5.
load() {
  wrk -t"$1" -c"$2" -d"$DURATION" --latency -s "$4" "http://$3/v1/send" > "$5"
}
requests() { awk '/requests in/ { print $1 }' "$1"; }
rate() { awk '/^Requests\/sec:/ { printf "%d", $2 }' "$1"; }
p99() { awk '$1 == "99%" { print $2 }' "$1"; }
errors() { awk '/Non-2xx or 3xx responses:/ { n = $5 } /Socket errors:/ { n += $4 + $6 + $8 + $10 } END { print n + 0 }' "$1"; }
stop_nodes() {
  kill $1 2>/dev/null || true
  for pid in $1; do wait "$pid" 2>/dev/null || true; done
}

ROWS=()
row() { ROWS+=("$(printf '| %-36s | %9s | %-22s | %6s | %-5s |' "$@")"); }
loadavg() { cut -d' ' -f1 /proc/loadavg; }

echo "== (a) one node, redb"
# bench_data made the domain and the key in $DATA.
node "$DATA"
mailbox "$HTTP"
LOAD=$(loadavg)
load 2 "$CONNECTIONS" "$HTTP" "$(script a)" "$DATA/wrk-a.txt"
cat "$DATA/wrk-a.txt"
row "(a) one node, redb" "$(rate "$DATA/wrk-a.txt")" "$(p99 "$DATA/wrk-a.txt")" "$(errors "$DATA/wrk-a.txt")" "$LOAD"
stop_nodes "$SERVER"

echo "== (b) one node, PostgreSQL"
URL=$(database one)
node_dir DIR1
seed "$DIR1" "$URL"
node "$DIR1" --store "$URL" --node n1
mailbox "$HTTP"
LOAD=$(loadavg)
load 2 "$CONNECTIONS" "$HTTP" "$(script b)" "$DIR1/wrk-b.txt"
cat "$DIR1/wrk-b.txt"
row "(b) one node, PostgreSQL" "$(rate "$DIR1/wrk-b.txt")" "$(p99 "$DIR1/wrk-b.txt")" "$(errors "$DIR1/wrk-b.txt")" "$LOAD"
stop_nodes "$SERVER"
pg_work one "$(requests "$DIR1/wrk-b.txt")"

echo "== (c) two nodes, one PostgreSQL, one wrk each (half the connections each)"
URL=$(database two)
node_dir DIR1; node_dir DIR2
seed "$DIR1" "$URL"
node "$DIR1" --store "$URL" --node n1
HTTP1=$HTTP; SERVER1=$SERVER
mailbox "$HTTP1"
node "$DIR2" --store "$URL" --node n2
HTTP2=$HTTP; SERVER2=$SERVER
DATA=$DIR1; S1=$(script c1)
DATA=$DIR2; S2=$(script c2)
HALF=$(( CONNECTIONS / 2 ))
LOAD=$(loadavg)
load 1 "$HALF" "$HTTP1" "$S1" "$DIR1/wrk-c.txt" &
W1=$!
load 1 "$HALF" "$HTTP2" "$S2" "$DIR2/wrk-c.txt" &
W2=$!
wait $W1 $W2
cat "$DIR1/wrk-c.txt" "$DIR2/wrk-c.txt"
R1=$(rate "$DIR1/wrk-c.txt"); R2=$(rate "$DIR2/wrk-c.txt")
E=$(( $(errors "$DIR1/wrk-c.txt") + $(errors "$DIR2/wrk-c.txt") ))
row "(c) two nodes, one PostgreSQL" "$(( R1 + R2 ))" "$(p99 "$DIR1/wrk-c.txt") / $(p99 "$DIR2/wrk-c.txt")" "$E" "$LOAD"
RETRIES=$(curl -sf "http://$HTTP1/metrics" "http://$HTTP2/metrics" | awk '/^edgemail_store_retries_total/ { n += $2 } END { print n + 0 }')
stop_nodes "$SERVER1 $SERVER2"
pg_work two "$(( $(requests "$DIR1/wrk-c.txt") + $(requests "$DIR2/wrk-c.txt") ))"
if [ "${STATEMENTS:-0}" = 1 ]; then
  echo "statements PostgreSQL refused (serialization failures, deadlocks), by edgemail table:"
  grep -o "parameters: \$1 = '[^']*'" "$PG_ROOT/log" | sort | uniq -c | sort -rn | head -n 12 || true
fi

echo
echo "$(nproc) cores, $(date -u +%F), $DURATION per run, $CONNECTIONS connections in all, $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '| %-36s | %9s | %-22s | %6s | %-5s |\n' "Run" "sends/s" "p99" "errors" "load"
printf '| %-36s | %9s | %-22s | %6s | %-5s |\n' "---" "---" "---" "---" "---"
printf '%s\n' "${ROWS[@]}"
echo "errors: non-2xx answers and wrk's socket errors (a timeout is an answer later than 2 s)"
echo "PostgreSQL serialization retries during (c), both nodes: $RETRIES"
