# shellcheck shell=bash disable=SC2034  # sourced: the callers read the CG_ variables
# CPU quota groups for the shell benchmarks (sourced, not run). A process under test runs in a
# group of its own capped at $QUOTA cores, so that a figure says what it does with that much CPU
# whatever else the machine runs: on a 2-core machine two uncapped nodes, PostgreSQL and wrk
# share the same cores, and a second node adds no CPU, while capped nodes add CPU as added
# machines would. cgroup v2 (cpu.max, usage from cpu.stat) or v1 (cpu.cfs_quota_us, usage from
# cpuacct, mounted with cpu or apart); root is needed to write either. Where neither can be
# written, CG_MODE=none, CG_WHY says why, and the processes run without a quota.
#
#   cg_detect                 once, after QUOTA is set (cores, e.g. 0.25; 0 for no quota)
#   cg_make NAME              a group; sets CG_PROCS, the files a process writes its pid to
#   sh "$CG_WRAP" CMD ARGS    runs CMD inside the groups listed in $SCALEOUT_CGROUPS (CG_PROCS)
#   cg_cpu_ns NAME PID        CPU time the group used so far (PID's own time without a group)
#   cg_throttled NAME         periods in which the group hit its quota
#   cg_remove NAME; cg_cleanup  remove one group, or every group made (processes gone first)

CG_PERIOD=100000
CG_MODE=none
CG_WHY=""
CG_MADE=""
CG_PREFIX="edgemail-bench-$$"

cg_detect() {
  CG_QUOTA_US=$(awk -v q="$QUOTA" 'BEGIN { printf "%d", q * 100000 }')
  CG_WRAP=$(mktemp /tmp/edgemail-cgroup-wrap.XXXXXX)
  # The pid is the shell's, and exec keeps it: the command starts inside its groups, so not one
  # of its threads ever runs outside the quota.
  cat > "$CG_WRAP" <<'SH'
for procs in $SCALEOUT_CGROUPS; do echo $$ > "$procs" || exit 111; done
exec "$@"
SH
  local probe
  if [ "$CG_QUOTA_US" = 0 ]; then
    CG_WHY="QUOTA=$QUOTA asks for none"
  elif [ "$CG_QUOTA_US" -lt 1000 ]; then
    echo "QUOTA=$QUOTA: at least 0.01 cores, or 0 for none" >&2
    exit 1
  elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    CG_V2=/sys/fs/cgroup
    probe="$CG_V2/$CG_PREFIX-probe"
    grep -qw cpu "$CG_V2/cgroup.subtree_control" 2>/dev/null ||
      echo +cpu > "$CG_V2/cgroup.subtree_control" 2>/dev/null || true
    if mkdir "$probe" 2>/dev/null; then
      echo "$CG_QUOTA_US $CG_PERIOD" > "$probe/cpu.max" 2>/dev/null && CG_MODE=v2
      rmdir "$probe"
    fi
    [ "$CG_MODE" = v2 ] || CG_WHY="cgroup v2 at $CG_V2: cannot make a group with cpu.max (not root, or the cpu controller is not delegated)"
  elif [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
    CG_CPU=/sys/fs/cgroup/cpu
    probe="$CG_CPU/$CG_PREFIX-probe"
    if mkdir "$probe" 2>/dev/null; then
      echo "$CG_QUOTA_US" > "$probe/cpu.cfs_quota_us" 2>/dev/null && CG_MODE=v1
      rmdir "$probe"
    fi
    CG_ACCT=""
    if [ -f "$CG_CPU/cpuacct.usage" ]; then
      CG_ACCT=$CG_CPU
    elif [ -w /sys/fs/cgroup/cpuacct ] && [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then
      CG_ACCT=/sys/fs/cgroup/cpuacct
    fi
    [ "$CG_MODE" = v1 ] || CG_WHY="cgroup v1 at $CG_CPU: cannot make a group with cpu.cfs_quota_us (not root?)"
  else
    CG_WHY="no cgroup cpu controller found under /sys/fs/cgroup"
  fi
}

cg_make() {
  local name="$CG_PREFIX-$1"
  CG_PROCS=""
  case $CG_MODE in
    v2)
      mkdir "$CG_V2/$name"
      echo "$CG_QUOTA_US $CG_PERIOD" > "$CG_V2/$name/cpu.max"
      CG_PROCS="$CG_V2/$name/cgroup.procs"
      ;;
    v1)
      mkdir "$CG_CPU/$name"
      echo "$CG_PERIOD" > "$CG_CPU/$name/cpu.cfs_period_us"
      echo "$CG_QUOTA_US" > "$CG_CPU/$name/cpu.cfs_quota_us"
      CG_PROCS="$CG_CPU/$name/cgroup.procs"
      if [ -n "$CG_ACCT" ] && [ "$CG_ACCT" != "$CG_CPU" ]; then
        mkdir "$CG_ACCT/$name"
        CG_PROCS="$CG_PROCS $CG_ACCT/$name/cgroup.procs"
      fi
      ;;
    *) return 0 ;;
  esac
  CG_MADE="$CG_MADE $1"
}

cg_cpu_ns() {
  local name="$CG_PREFIX-$1"
  case $CG_MODE in
    v2)
      awk '$1 == "usage_usec" { printf "%d", $2 * 1000 }' "$CG_V2/$name/cpu.stat"
      return
      ;;
    v1)
      if [ -n "$CG_ACCT" ]; then
        cat "$CG_ACCT/$name/cpuacct.usage"
        return
      fi
      ;;
  esac
  # utime and stime, fields 14 and 15 of /proc/PID/stat (after the name in parentheses), in
  # clock ticks.
  sed 's/.*) //' "/proc/$2/stat" | awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($12 + $13) * 1e9 / hz }'
}

cg_throttled() {
  local name="$CG_PREFIX-$1" dir
  case $CG_MODE in
    v2) dir="$CG_V2/$name" ;;
    v1) dir="$CG_CPU/$name" ;;
    *) echo "-"; return ;;
  esac
  awk '$1 == "nr_throttled" { print $2 }' "$dir/cpu.stat"
}

cg_remove() {
  local name="$CG_PREFIX-$1" dir
  for dir in "${CG_V2:-}" "${CG_CPU:-}" "${CG_ACCT:-}"; do
    [ -n "$dir" ] && [ -d "$dir/$name" ] || continue
    # A process that exited leaves its group a moment later.
    for _ in $(seq 50); do rmdir "$dir/$name" 2>/dev/null && break; sleep 0.1; done
  done
  CG_MADE=$(echo "$CG_MADE" | tr ' ' '\n' | grep -vx -- "$1" | tr '\n' ' ' || true)
}

cg_cleanup() {
  local n
  for n in $CG_MADE; do cg_remove "$n"; done
  rm -f "${CG_WRAP:-}"
}
