#!/bin/sh
# Figures of `runq compare` (issue 16), rerunnable:
#   scripts/compare-figures.sh [ROUNDS] [HOG_ROUNDS]
# False alarms: ROUNDS (20) rounds of two fresh PipeIo runs (5 repeats of
# 1 s each), compared; counts rounds that flag a regression.
# Detection: HOG_ROUNDS (5) rounds of a fresh baseline against a run with one
# busy-loop hog per online CPU competing; counts rounds flagged.
# Speed: wall time of `runq compare` on two 10-repeat files (10 calls).
# RUNQ=path/to/runq overrides the binary (default target/release/runq);
# RUN_FLAGS adds flags to every run (e.g. --no-cgroups, so the hogs compete
# with the workers task against task rather than cgroup against cgroup).
set -eu
R=${RUNQ:-target/release/runq}
ROUNDS=${1:-20}
HOG_ROUNDS=${2:-5}
D=$(mktemp -d)
HOGS=""
cleanup() { for p in $HOGS; do kill "$p" 2>/dev/null || true; done; rm -rf "$D"; }
trap cleanup EXIT INT TERM
RUN_FLAGS=${RUN_FLAGS:-}
# shellcheck disable=SC2086
run() { "$R" run $RUN_FLAGS --work-type PipeIo --duration 1s --repeat "$1" --output "$2" >/dev/null 2>&1 || true; }
cmp_rc() { rc=0; "$R" compare "$1" "$2" >"$3" 2>&1 || rc=$?; echo "$rc"; }
uptime
flagged=0
i=1
while [ "$i" -le "$ROUNDS" ]; do
  run 5 "$D/a.json"; run 5 "$D/b.json"
  rc=$(cmp_rc "$D/a.json" "$D/b.json" "$D/out")
  if [ "$rc" = 1 ]; then flagged=$((flagged + 1)); cat "$D/out"; fi
  echo "false-alarm round $i: exit $rc ($(tail -1 "$D/out"))"
  i=$((i + 1))
done
echo "FALSE ALARMS: $flagged of $ROUNDS rounds flagged a regression"
detected=0
i=1
while [ "$i" -le "$HOG_ROUNDS" ]; do
  run 5 "$D/a.json"
  HOGS=""
  for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & HOGS="$HOGS $!"; done
  run 5 "$D/b.json"
  for p in $HOGS; do kill "$p"; done; HOGS=""
  rc=$(cmp_rc "$D/a.json" "$D/b.json" "$D/out")
  if [ "$rc" = 1 ]; then detected=$((detected + 1)); else cat "$D/out"; fi
  echo "hog round $i: exit $rc; regressed: $(grep ' regressed$' "$D/out" | awk '{print $2}' | tr '\n' ' ')"
  i=$((i + 1))
done
echo "DETECTION: $detected of $HOG_ROUNDS rounds flagged a regression"
run 10 "$D/a10.json"; run 10 "$D/b10.json"
ls -l "$D/a10.json" "$D/b10.json" | awk '{print $5, $9}'
for _ in 1 2 3 4 5 6 7 8 9 10; do
  s=$(date +%s%N); "$R" compare "$D/a10.json" "$D/b10.json" >/dev/null 2>&1 || true; e=$(date +%s%N)
  echo "compare of two 10-repeat files: $(( (e - s) / 1000000 )) ms"
done
uptime
