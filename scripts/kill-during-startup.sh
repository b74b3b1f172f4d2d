#!/bin/bash
# Start-up robustness: 20 runs of 128 SpinWait workers in a cgroup, the
# first worker SIGKILLed as soon as it appears. Each run must end with all
# 128 reports (one dead) and its cgroups removed. Needs root.
# Usage: scripts/kill-during-startup.sh [RUNQ_BINARY]
B=${1:-target/release/runq}
ok=0
for t in $(seq 1 20); do
  $B run --work-type SpinWait --workers 128 --duration 1 --cgroup killtest/a --json > ${TMPDIR:-/tmp}/runq-k.json 2>${TMPDIR:-/tmp}/runq-k.err &
  rp=$!
  while :; do v=$(pgrep -P $rp | head -1); [ -n "$v" ] && break; done
  kill -9 $v
  wait $rp; rc=$?
  n=$(python3 -c "import json;d=json.load(open('${TMPDIR:-/tmp}/runq-k.json'));print(len(d['reports']), sum(1 for r in d['reports'] if r['exit_info']))" 2>/dev/null)
  left=$(ls -d /sys/fs/cgroup/*/runq/$rp-* 2>/dev/null | wc -l)
  echo "trial $t: rc=$rc reports,dead=$n cgroups_left=$left $(head -c 200 ${TMPDIR:-/tmp}/runq-k.err)"
  [ "$n" = "128 1" ] && [ "$left" = 0 ] && ok=$((ok+1))
done
echo "full reports with cgroups removed: $ok/20"
