#!/usr/bin/env bash
# Scale-out of durable sends (issue 39): what one, two and three edgemail nodes sharing one
# PostgreSQL accept and deliver, each node capped at QUOTA cores (default a quarter), beside one
# node on the embedded redb file under the same cap. Runs, each on a fresh store (domain
# bench.example, one key, mailbox news):
#   (a) one node on redb               (b) one node on PostgreSQL
#   (c) two nodes on one PostgreSQL    (d) three nodes on one PostgreSQL
#   (e) with FAULTS=1 only: two nodes on one PostgreSQL that refuses some commits (below)
#   (f) one node on PostgreSQL accepting sends scheduled an hour ahead: the round trips to
#       PostgreSQL per accepted send of the accept path alone (no delivery runs meanwhile)
# Every node runs in a CPU cgroup of its own (benches/cgroup.sh; v2 cpu.max or v1
# cpu.cfs_quota_us), so a node has the same CPU in every run and a second node adds CPU as a
# second machine would; PostgreSQL, wrk and the sink run outside the groups. One wrk per node
# drives POST /v1/send (one distinct recipient a request) for DURATION with CONNECTIONS
# connections (64), so each node meets the load one node meets alone: the runs measure what a
# node added brings when the clients grow with it. SPLIT=1 splits CONNECTIONS between the nodes
# instead; fewer connections a node then gather in smaller group commits, and a node gives more
# of its CPU to delivering meanwhile, so its accepted figure falls while its end-to-end one holds
# (docs/performance-cluster.md). Meanwhile the nodes deliver over SMTP to a counting sink
# (benches/smtp_count_sink.py; recipients at bench.test, MX through a local dnsmasq, the port
# through EDGEMAIL_DELIVERY_PORT) that counts deliveries per (Message-ID, recipient).
#
# Per run: accepted/s = wrk's 2xx answers / DURATION; end to end/s = the same answers / the time
# from the start of the load until the sink has received every one and every node's queue is
# empty ("incomplete" when that takes over WAIT seconds after the load); p99 (each node's wrk);
# errors (non-2xx answers, socket errors); duplicates the sink saw; store retries
# (edgemail_store_retries_total) per write transaction (group commits and their retries, from
# every node's /metrics; PostgreSQL's xact_commit + xact_rollback are listed too); node CPU per
# accepted send and the periods the quota throttled; the machine's idle CPU during the load (near
# 0, PostgreSQL and wrk, outside the quota, were short of CPU and set the figures, not the nodes).
# Then the goals, PASS or FAIL each:
# (c)/(b) >= 1.7 and (d)/(b) >= 2.3 on both figures, (b)/(a) >= 0.5, retries under 1 %, no
# duplicate, at most 3 round trips per accepted send on the accept path (f). The exit status is 0 (a report while the work is in progress) unless STRICT=1.
#
# FAULTS=1 adds (e): a trigger on the store's relation (edgemail_kv) raises SQLSTATE 40001 for
# FAULT_RATE (0.3) of the statements that delete rows of table 'queue', as recording a delivery
# removes its queue entry, so commits fail after the message went out; the sink must still see
# every message once.
#
#   bash benches/scaleout.sh                  # as root (the cgroups; PostgreSQL as postgres)
#   DURATION=5s QUOTA=0.5 CONNECTIONS=48 bash benches/scaleout.sh
#   ONLY=bf bash benches/scaleout.sh           # some of the runs (letters a-d, f)
#   FAULTS=1 FAULT_RATE=0.5 STRICT=1 bash benches/scaleout.sh
# QUOTA=0 runs the nodes without a quota, as does a machine where no cgroup can be made (the
# table then says so, loudly). WAIT (120) caps the wait for the deliveries, in seconds.
# STATEMENTS=1 also lists each PostgreSQL run's most frequent statements (pg_stat_statements)
# and the statements PostgreSQL refused; a diagnosis that costs a little throughput.
# Needs: wrk and dnsmasq (installed when missing), python3, PostgreSQL's server binaries under
# /usr/lib/postgresql/*/bin (initdb, pg_ctl, createdb, psql).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
SPLIT=${SPLIT:-0}
QUOTA=${QUOTA:-0.25}
WAIT=${WAIT:-120}
FAULTS=${FAULTS:-0}
FAULT_RATE=${FAULT_RATE:-0.3}
STRICT=${STRICT:-0}
STATEMENTS=${STATEMENTS:-0}
command -v wrk >/dev/null || apt-get install -y wrk >/dev/null
command -v dnsmasq >/dev/null || apt-get install -y dnsmasq-base >/dev/null
source benches/common.sh
source benches/cgroup.sh
bench_data scaleout
cg_detect
SECS=$(awk -v d="$DURATION" 'BEGIN { n = d + 0; u = substr(d, length(d));
  print (u == "m" ? n * 60 : u == "h" ? n * 3600 : n) }')

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$PG_BIN/initdb" ] || { echo "no PostgreSQL server binaries under /usr/lib/postgresql" >&2; exit 1; }
PG_ROOT=$(mktemp -d /tmp/edgemail-scaleout-pg.XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PG_PORT=$(free_port)
AS=()
if [ "$(id -u)" = 0 ]; then
  AS=(runuser -u postgres --)
  chown postgres "$PG_ROOT"
fi
DIRS="$DATA"
cleanup() {
  kill $PIDS 2>/dev/null || true
  wait 2>/dev/null || true
  cg_cleanup
  [ -f "$PG_ROOT/data/postmaster.pid" ] && "${AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_ROOT/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf $DIRS "$PG_ROOT"
}
trap cleanup EXIT
PG_EXTRA=""
if [ "$STATEMENTS" = 1 ]; then
  PG_EXTRA="-c shared_preload_libraries=pg_stat_statements -c log_parameter_max_length_on_error=48"
fi
"${AS[@]}" "$PG_BIN/initdb" -A trust -U postgres -D "$PG_ROOT/data" >/dev/null
"${AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_ROOT/data" -l "$PG_ROOT/log" -w \
  -o "-p $PG_PORT -k $PG_ROOT -c listen_addresses=127.0.0.1 -c max_connections=300 $PG_EXTRA" start >/dev/null
"${AS[@]}" "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -Atc \
  "select 'postgres ' || current_setting('server_version') || ', fsync=' || current_setting('fsync') || ', synchronous_commit=' || current_setting('synchronous_commit')"

DNS_PORT=5397; SINK_PORT=$(free_port); SINK_STATUS=$(free_port)
start_mx_dns $DNS_PORT
python3 benches/smtp_count_sink.py --port "$SINK_PORT" --status "$SINK_STATUS" &
PIDS="$PIDS $!"
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$SINK_STATUS/" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$SINK_STATUS/" >/dev/null || { echo "the counting sink did not start" >&2; exit 1; }

psql_in() { "${AS[@]}" "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -d "$1" -Atc "$2"; }

# A fresh database on the cluster; prints its URL.
database() {
  "${AS[@]}" "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U postgres "$1"
  [ "$STATEMENTS" != 1 ] || psql_in "$1" "create extension pg_stat_statements" >/dev/null
  echo "postgres://postgres@127.0.0.1:$PG_PORT/$1"
}

# Transactions database $1 ended so far (committed, rolled back: read snapshots end in one).
pg_xacts() { psql_in "$1" "select xact_commit + xact_rollback from pg_stat_database where datname = '$1'"; }

# What database $1 did, per accepted send ($2): commits, rollbacks and rows written.
pg_work() {
  psql_in "$1" "select format('PostgreSQL, database %s: %s commits, %s rollbacks, %s rows written; per send: %s commits, %s rows', datname, xact_commit, xact_rollback, tup_inserted + tup_updated + tup_deleted, round(xact_commit::numeric / greatest($2, 1), 2), round((tup_inserted + tup_updated + tup_deleted)::numeric / greatest($2, 1), 1)) from pg_stat_database where datname = '$1'"
  [ "$STATEMENTS" != 1 ] || psql_in "$1" "select format('%10s calls %8s ms  %s', calls, round(total_exec_time), left(regexp_replace(query, '\s+', ' ', 'g'), 90)) from pg_stat_statements where dbid = (select oid from pg_database where datname = '$1') order by calls desc limit 12"
}

# FAULTS: database $1 refuses FAULT_RATE of the statements deleting queue rows, as a lost race
# (40001); the count of refusals is kept in a sequence, which a rollback does not undo.
install_faults() {
  psql_in "$1" "
create sequence scaleout_refusals;
create function scaleout_refuse() returns trigger language plpgsql as \$\$
begin
  if exists (select 1 from gone where tbl = 'queue') and random() < $FAULT_RATE then
    perform nextval('scaleout_refusals');
    raise exception 'scaleout: injected commit failure after a delivery' using errcode = '40001';
  end if;
  return null;
end \$\$;
create trigger scaleout_faults after delete on edgemail_kv referencing old table as gone
  for each statement execute function scaleout_refuse();" >/dev/null
}
refusals() { psql_in "$1" "select case when is_called then last_value else 0 end from scaleout_refusals"; }

# A new data directory for a node on PostgreSQL (its admin socket, log and wrk output; the data
# is in the database), in the variable named $1; removed on exit.
node_dir() {
  local dir
  dir=$(mktemp -d /tmp/edgemail-scaleout-node.XXXXXX)
  DIRS="$DIRS $dir"
  printf -v "$1" '%s' "$dir"
}

# Domain bench.example and a key in the store of the data directory $1 (and URL $2 when on
# PostgreSQL); sets KEY.
seed() {
  local store=()
  [ -z "${2:-}" ] || store=(--store "$2")
  $BIN domain add bench.example --data "$1" "${store[@]}" >/dev/null
  KEY=$($BIN key create --name bench --domain bench.example --data "$1" "${store[@]}" | tail -n 1)
}

# Starts a node on data directory $1 in a new CPU group named $2, with the extra serve arguments
# after them; sets HTTP and SERVER.
node() {
  DATA=$1
  cg_make "$2"
  shift 2
  BIN="sh $CG_WRAP $BIN" SCALEOUT_CGROUPS="$CG_PROCS" \
  EDGEMAIL_API_RATE_PER_SECOND=10000000 EDGEMAIL_API_BURST=10000000 \
  EDGEMAIL_DELIVERY_PORT=$SINK_PORT EDGEMAIL_LOG_LEVEL=warn \
    start_server --nameserver 127.0.0.1:$DNS_PORT "$@"
  [ -n "$HTTP" ] || { echo "the node on $DATA did not start:" >&2; cat "$DATA/server.log" >&2; exit 1; }
}

mailbox() {
  curl -sf -o /dev/null -X POST "http://$1/v1/mailboxes" -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' -d '{"address":"news","displayName":"Bench News"}'
}

# A wrk script sending one message a request to a recipient no other request has: the run's
# tag first (the sink counts per tag), then the node $2, the wrk thread and a counter. With $3
# (Unix milliseconds) the messages are scheduled for then instead of sent at once.
script() {
  local at=${3:+,\"scheduledAt\":$3}
  cat > "$DATA/send-$1.lua" <<LUA
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local n = 0
request = function()
  n = n + 1
  local body = string.format('{"from":"news@bench.example","to":"$1-$2-%d-%d@bench.test","subject":"Hello %d","html":"<p>Hello <b>there</b>, this is message %d.</p>"$at}', tid, n, n, n)
  return wrk.format("POST", "/v1/send", { ["Authorization"] = "Bearer $KEY", ["Content-Type"] = "application/json" }, body)
end
LUA
  echo "$DATA/send-$1.lua"
}

requests() { awk '/requests in/ { print $1 }' "$1"; }
p99() { awk '$1 == "99%" { print $2 }' "$1"; }
non2xx() { awk '/Non-2xx or 3xx responses:/ { n = $5 } END { print n + 0 }' "$1"; }
errors() { awk '/Non-2xx or 3xx responses:/ { n = $5 } /Socket errors:/ { n += $4 + $6 + $8 + $10 } END { print n + 0 }' "$1"; }
now() { date +%s.%N; }
# The machine's idle and total CPU time so far (/proc/stat's first line, in ticks), and the idle
# share in % between such a pair $1 and now: near 0 says PostgreSQL, wrk and the sink (outside
# the quota) ran out of cores, and then the nodes' figures say little.
cpustat() { awk '$1 == "cpu" { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }
idle_since() {
  cpustat | awk -v was="$1" 'BEGIN { split(was, w, " ") } { printf "%d", ($2 > w[2] ? 100 * ($1 - w[1]) / ($2 - w[2]) : 0) }'
}
# Field $2 of the sink's counts for tag $1.
sink() { curl -sf "http://127.0.0.1:$SINK_STATUS/$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
# The sum of the series $1 (a prefix) over the nodes' /metrics at $2...
metric() {
  local series=$1 http
  shift
  for http in "$@"; do curl -sf "http://$http/metrics"; done |
    awk -v s="$series" 'index($1, s) == 1 { n += $2 } END { printf "%d", n }'
}

ROWS=()
declare -A ACC E2E DUPS SHARE
for id in a b c d e; do ACC[$id]=""; E2E[$id]=""; DUPS[$id]=0; SHARE[$id]=0; done
BUSY=""

# One run: tag $1 (recipients and sink counts), label $2, $3 nodes, on a new database named $4
# or, without it, on redb in $DATA (bench_data seeded it). Adds a row and its figures.
run() {
  local id=$1 label=$2 n=$3 db=${4:-} url="" i nd f
  local dirs=() https=() pids=() wrks=() cpu0=() store=()
  echo "== ($id) $label"
  if [ -z "$db" ]; then
    dirs=("$DATA")
  else
    url=$(database "$db")
    for i in $(seq "$n"); do node_dir nd; dirs+=("$nd"); done
    seed "${dirs[0]}" "$url"
    [ "$id" != e ] || install_faults "$db"
  fi
  for i in $(seq "$n"); do
    [ -z "$url" ] || store=(--store "$url" --node "n$i")
    node "${dirs[i-1]}" "$id-n$i" "${store[@]}"
    https+=("$HTTP"); pids+=("$SERVER")
  done
  mailbox "${https[0]}"
  local per=$CONNECTIONS threads=1 xacts0=0 t0 st0 idle
  [ "$SPLIT" != 1 ] || per=$(( CONNECTIONS / n ))
  [ "$per" -ge 1 ] || per=1
  [ "$n" != 1 ] || threads=2
  [ -z "$db" ] || xacts0=$(pg_xacts "$db")
  for i in $(seq "$n"); do cpu0+=("$(cg_cpu_ns "$id-n$i" "${pids[i-1]}")"); done
  t0=$(now)
  st0=$(cpustat)
  for i in $(seq "$n"); do
    DATA=${dirs[i-1]}
    wrk -t"$threads" -c"$per" -d"$DURATION" --latency -s "$(script "$id" "n$i")" \
      "http://${https[i-1]}/v1/send" > "$DATA/wrk-$id.txt" &
    wrks+=($!)
  done
  wait "${wrks[@]}"
  idle=$(idle_since "$st0")
  [ "$idle" -ge 5 ] || BUSY="$BUSY ($id)"
  local accepted=0 errs=0 p99s=""
  for nd in "${dirs[@]}"; do
    f=$nd/wrk-$id.txt
    accepted=$(( accepted + $(requests "$f") - $(non2xx "$f") ))
    errs=$(( errs + $(errors "$f") ))
    p99s="$p99s${p99s:+ / }$(p99 "$f")"
  done
  delivered "$id" "$accepted" "${https[@]}"
  local retries commits trips cpu=0 throttled="" xacts="-" dups
  retries=$(metric edgemail_store_retries_total "${https[@]}")
  commits=$(metric edgemail_store_commit_duration_seconds_count "${https[@]}")
  trips=$(metric edgemail_store_round_trips_total "${https[@]}")
  for i in $(seq "$n"); do
    cpu=$(( cpu + $(cg_cpu_ns "$id-n$i" "${pids[i-1]}") - cpu0[i-1] ))
    throttled="$throttled${throttled:+/}$(cg_throttled "$id-n$i")"
  done
  kill "${pids[@]}" 2>/dev/null || true
  for i in $(seq "$n"); do wait "${pids[i-1]}" 2>/dev/null || true; cg_remove "$id-n$i"; done
  if [ -n "$db" ]; then
    sleep 0.5 # the backends report their counts as they end
    xacts=$(( $(pg_xacts "$db") - xacts0 ))
  fi
  dups=$(sink "$id" duplicates)
  ACC[$id]=$(awk -v a="$accepted" -v s="$SECS" 'BEGIN { printf "%.1f", a / s }')
  E2E[$id]=$(awk -v a="$accepted" -v t="$TOOK" 'BEGIN { if (t > 0) printf "%.1f", a / t }')
  DUPS[$id]=$dups
  SHARE[$id]=$(awk -v r="$retries" -v c="$commits" 'BEGIN { printf "%.2f", (c + r > 0 ? 100 * r / (c + r) : 0) }')
  echo "accepted $accepted (${ACC[$id]}/s, errors $errs, p99 $p99s, machine idle $idle %); sink: $(sink "$id" distinct) delivered," \
    "$dups duplicates, ${TOOK:-incomplete after $WAIT s}${TOOK:+ s since the load began}; queued at the end: $QUEUED"
  echo "store: $retries retries, $commits group commits (${SHARE[$id]} %), PostgreSQL transactions $xacts," \
    "$(awk -v t="$trips" -v a="$accepted" 'BEGIN { printf "%.1f", (a > 0 ? t / a : 0) }') round trips per accepted send;" \
    "node CPU $(awk -v c="$cpu" 'BEGIN { printf "%.2f", c / 1e9 }') s, throttled periods $throttled"
  [ "$id" != e ] || echo "commits refused by the injected fault: $(refusals "$db")"
  [ "$dups" = 0 ] || { echo "delivered more than once (times, Message-ID, recipient):"; curl -sf "http://127.0.0.1:$SINK_STATUS/$id/duplicates" | head -n 5 || true; }
  [ -z "$db" ] || pg_work "$db" "$accepted"
  ROWS+=("$(printf '| %-40s | %10s | %12s | %-30s | %6s | %4s | %-16s | %7s | %4s |' "($id) $label" \
    "${ACC[$id]}" "${E2E[$id]:-incomplete}" "$p99s" "$errs" "$dups" "$retries (${SHARE[$id]} %)" \
    "$(awk -v c="$cpu" -v a="$accepted" 'BEGIN { printf "%.2f", (a > 0 ? c / 1e6 / a : 0) }')" "$idle")")
}

# Waits until the sink has the $2 accepted messages of run $1 and the queues of the nodes at $3...
# are empty, at most WAIT seconds after the load; sets TOOK (seconds since t0 of the caller, empty
# when incomplete) and QUEUED (entries left).
delivered() {
  local id=$1 accepted=$2 deadline
  shift 2
  deadline=$(( $(date +%s) + WAIT ))
  TOOK=""
  QUEUED="?"
  while :; do
    # The nodes are asked only once the sink has enough: a scrape reads the queue, and costs.
    if [ "$(sink "$id" distinct)" -ge "$accepted" ]; then
      QUEUED=$(metric edgemail_queue_depth "$@")
      if [ "$QUEUED" = 0 ]; then
        TOOK=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }')
        return
      fi
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      QUEUED=$(metric edgemail_queue_depth "$@")
      return
    fi
    sleep 0.2
  done
}

# $1 / $2 to two places, or "n/a" when either is missing or zero.
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "n/a" }'; }
FAILS=0
# A goal: what ($1), the value ($2), the comparison ($3: ge, lt, eq) and the goal ($4).
goal() {
  local verdict
  verdict=$(awk -v v="$2" -v op="$3" -v g="$4" 'BEGIN {
    if (v == "n/a" || v == "") { print "FAIL"; exit }
    ok = op == "ge" ? v + 0 >= g + 0 : op == "lt" ? v + 0 < g + 0 : v + 0 == g + 0
    print ok ? "PASS" : "FAIL" }')
  [ "$verdict" = PASS ] || FAILS=$(( FAILS + 1 ))
  printf '| %-52s | %8s | %-6s | %-4s |\n' "$1" "$2" "$(case $3 in ge) echo ">= $4";; lt) echo "< $4";; *) echo "= $4";; esac)" "$verdict"
}

report() {
  local most dups id
  echo
  echo "$(nproc) cores, $(date -u +%F), $DURATION per run, $CONNECTIONS connections $([ "$SPLIT" = 1 ] && echo "split between the nodes" || echo "a node")," \
    "$([ "$CG_MODE" = none ] && echo "no CPU quota" || echo "a node capped at $QUOTA cores ($CG_MODE)"), $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  if [ "$CG_MODE" = none ]; then
    echo "!!!!!!!! WARNING: NO CPU QUOTA: $CG_WHY."
    echo "!!!!!!!! The nodes ran unlimited on the machine's cores beside PostgreSQL, wrk and the sink:"
    echo "!!!!!!!! the ratios below do not measure scale-out."
  fi
  printf '| %-40s | %10s | %12s | %-30s | %6s | %4s | %-16s | %7s | %4s |\n' "Run" "accepted/s" "end to end/s" \
    "p99 (per node)" "errors" "dups" "retries (share)" "CPU ms/send" "idle"
  printf '| %-40s | %10s | %12s | %-30s | %6s | %4s | %-16s | %7s | %4s |\n' --- --- --- --- --- --- --- --- ---
  printf '%s\n' "${ROWS[@]}"
  echo "accepted/s: 2xx answers / $SECS s; end to end/s: the same / the time until the sink had them all and"
  echo "the queues were empty; errors: non-2xx answers and wrk's socket errors; dups: (Message-ID, recipient)"
  echo "pairs the sink received more than once; share: retries / (group commits + retries); CPU: the"
  echo "nodes' CPU time per accepted send; idle: the machine's idle CPU in % during the load"
  if [ -n "$BUSY" ]; then
    echo "!! The machine had under 5 % idle CPU during the load of$BUSY (load average now $(cut -d' ' -f1 /proc/loadavg)):"
    echo "!! PostgreSQL, wrk, the sink or other work outside the quota had too little CPU, so those"
    echo "!! figures may be the machine's, not the nodes'. Measure on an otherwise idle machine."
  fi
  echo
  printf '| %-52s | %8s | %-6s | %-4s |\n' "Goal" "value" "goal" ""
  printf '| %-52s | %8s | %-6s | %-4s |\n' --- --- --- ---
  goal "(c) two nodes / (b) one node, accepted" "$(ratio "${ACC[c]}" "${ACC[b]}")" ge 1.7
  goal "(c) two nodes / (b) one node, end to end" "$(ratio "${E2E[c]}" "${E2E[b]}")" ge 1.7
  goal "(d) three nodes / (b) one node, accepted" "$(ratio "${ACC[d]}" "${ACC[b]}")" ge 2.3
  goal "(d) three nodes / (b) one node, end to end" "$(ratio "${E2E[d]}" "${E2E[b]}")" ge 2.3
  goal "(b) PostgreSQL / (a) redb, one node, accepted" "$(ratio "${ACC[b]}" "${ACC[a]}")" ge 0.5
  goal "(b) PostgreSQL / (a) redb, one node, end to end" "$(ratio "${E2E[b]}" "${E2E[a]}")" ge 0.5
  most=$(printf '%s\n' "${SHARE[b]}" "${SHARE[c]}" "${SHARE[d]}" | sort -g | tail -n 1)
  goal "store retries, % of write transactions, (b)-(d) most" "$most" lt 1
  goal "(f) round trips per accepted send, accept path" "${ACCEPT_TRIPS:-n/a}" lt 3.01
  dups=0
  for id in a b c d; do dups=$(( dups + DUPS[$id] )); done
  goal "duplicate deliveries, (a)-(d)" "$dups" eq 0
  [ "$FAULTS" != 1 ] || goal "duplicate deliveries, (e) commits refused" "${DUPS[e]}" eq 0
  if [ "$CG_MODE" = none ]; then
    echo "!!!!!!!! WARNING: NO CPU QUOTA (see above): these verdicts are not the issue's."
  fi
  if [ "$FAILS" -gt 0 ] && [ "$STRICT" = 1 ]; then
    echo "$FAILS goals failed (STRICT=1)"
    exit 1
  fi
}

# (f): the round trips of the accept path alone, under the same load on one node on PostgreSQL:
# the sends are scheduled an hour ahead, so no delivery runs meanwhile. Sets ACCEPT_TRIPS.
accept_path() {
  local url nd before after accepted
  echo "== (f) accept path alone: one node on PostgreSQL, sends scheduled an hour ahead"
  url=$(database accept)
  node_dir nd
  seed "$nd" "$url"
  node "$nd" f-n1 --store "$url" --node n1
  mailbox "$HTTP"
  before=$(metric edgemail_store_round_trips_total "$HTTP")
  DATA=$nd
  wrk -t2 -c"$CONNECTIONS" -d"$DURATION" -s "$(script f n1 $(( $(date +%s) * 1000 + 3600000 )))" \
    "http://$HTTP/v1/send" > "$nd/wrk-f.txt"
  after=$(metric edgemail_store_round_trips_total "$HTTP")
  accepted=$(( $(requests "$nd/wrk-f.txt") - $(non2xx "$nd/wrk-f.txt") ))
  kill "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
  cg_remove f-n1
  ACCEPT_TRIPS=$(awk -v t="$(( after - before ))" -v a="$accepted" 'BEGIN { if (a > 0) printf "%.2f", t / a }')
  echo "accepted $accepted ($(awk -v a="$accepted" -v s="$SECS" 'BEGIN { printf "%.1f", a / s }')/s), $(( after - before )) round trips: ${ACCEPT_TRIPS:-?} per accepted send"
}

echo "== CPU quota: $QUOTA cores a node ($CG_MODE)${CG_WHY:+: $CG_WHY}"
ONLY=${ONLY:-abcdf}
[[ $ONLY != *a* ]] || run a "one node, redb" 1
[[ $ONLY != *b* ]] || run b "one node, PostgreSQL" 1 one
[[ $ONLY != *c* ]] || run c "two nodes, one PostgreSQL" 2 two
[[ $ONLY != *d* ]] || run d "three nodes, one PostgreSQL" 3 three
[ "$FAULTS" != 1 ] || run e "two nodes, $FAULT_RATE of queue deletes fail" 2 faults
[[ $ONLY != *f* ]] || accept_path
if [ "$STATEMENTS" = 1 ]; then
  echo "statements PostgreSQL refused (serialization failures, deadlocks), by edgemail table:"
  grep -o "parameters: \$1 = '[^']*'" "$PG_ROOT/log" | sort | uniq -c | sort -rn | head -n 12 || true
fi
report
