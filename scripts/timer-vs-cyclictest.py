#!/usr/bin/env python3
"""TimerLatency against cyclictest at equal settings: alternating rounds of
one thread at a 1 ms period, both SCHED_FIFO 80 (a real-time thread has no
timer slack, so neither measures a slack the other lacks: cyclictest 2.4
does not set PR_SET_TIMERSLACK, and runq's TimerLatency sets 1 ns), p50
and p99 of each, and the median ratios. RUNQ_POLICY=normal compares
SCHED_OTHER instead (cyclictest then keeps the default 50 us slack and
runq 1 ns: not equal settings).

Usage: scripts/timer-vs-cyclictest.py [ROUNDS] [SECONDS] [VARIANT...]
A VARIANT is a runq binary with extra `runq run` arguments, as one string
(default "target/release/runq"), e.g. "target/release/runq --param
mlock=false". Every round runs cyclictest, then each variant.
Needs cyclictest (Debian: apt-get install rt-tests).
"""
import json
import os
import subprocess
import sys

POLICY = os.environ.get("RUNQ_POLICY", "fifo:80")


def cyclictest_us(secs):
    """(p50, p99) of one cyclictest run, us."""
    loops = str(int(secs * 1000))
    prio = [] if POLICY == "normal" else ["-p", POLICY.split(":")[1]]
    out = subprocess.run(
        ["cyclictest", "-m", "-i", "1000", "-l", loops, "-t", "1", "-q", "-h", "20000", *prio],
        capture_output=True, text=True, check=True).stdout
    hist = []
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            hist.append((int(parts[0]), int(parts[1])))
    total = sum(c for _, c in hist)

    def pct(q):
        seen = 0
        for us, count in hist:
            seen += count
            if seen >= q * total:
                return float(us)
        return float("nan")
    return pct(0.5), pct(0.99)


def runq_us(variant, secs):
    """(p50, p99) of one runq TimerLatency run, us."""
    binary, *extra = variant.split()
    policy = [] if POLICY == "normal" else ["--policy", POLICY]
    out = subprocess.run(
        [binary, "run", "--work-type", "TimerLatency", "--workers", "1",
         "--duration", str(secs), "--no-cgroups", "--json", *policy, *extra],
        capture_output=True, text=True).stdout
    g = json.loads(out)["groups"][0]
    return g["wake_p50_ns"] / 1e3, g["wake_p99_ns"] / 1e3


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 5
    variants = sys.argv[3:] or ["target/release/runq"]
    cts = []
    rqs = {v: [] for v in variants}
    ratios = {v: ([], []) for v in variants}
    print(f"policy: {POLICY} for both")
    for r in range(rounds):
        ct = cyclictest_us(secs)
        cts.append(ct)
        line = f"round {r}: cyclictest p50 {ct[0]:.0f} p99 {ct[1]:.0f} us"
        for v in variants:
            rq = runq_us(v, secs)
            rqs[v].append(rq)
            ratios[v][0].append(rq[0] / max(ct[0], 1))
            ratios[v][1].append(rq[1] / max(ct[1], 1))
            line += f" | [{v}] p50 {rq[0]:.1f} p99 {rq[1]:.1f} us"
        print(line, flush=True)
    print(f"median: cyclictest p50 {median([c[0] for c in cts]):.0f} "
          f"p99 {median([c[1] for c in cts]):.0f} us")
    for v in variants:
        print(f"median: [{v}] p50 {median([q[0] for q in rqs[v]]):.1f} "
              f"p99 {median([q[1] for q in rqs[v]]):.1f} us; median ratio to cyclictest "
              f"p50 {median(ratios[v][0]):.2f}, p99 {median(ratios[v][1]):.2f}")


if __name__ == "__main__":
    main()
