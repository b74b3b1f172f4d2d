#!/usr/bin/env python3
"""TimerLatency against cyclictest: alternating rounds of one SCHED_OTHER
thread at a 1 ms period, p99 wake latency of each, and the median ratio.

Usage: scripts/timer-vs-cyclictest.py [ROUNDS] [SECONDS] [VARIANT...]
A VARIANT is a runq binary with extra `runq run` arguments, as one string
(default "target/release/runq"), e.g. "target/release/runq --param
mlock=false". Every round runs cyclictest, then each variant.
Needs cyclictest (Debian: apt-get install rt-tests).
"""
import json
import subprocess
import sys


def cyclictest_p99_us(secs):
    loops = str(int(secs * 1000))
    out = subprocess.run(
        ["cyclictest", "-m", "-i", "1000", "-l", loops, "-t", "1", "-q", "-h", "20000"],
        capture_output=True, text=True, check=True).stdout
    hist = []
    for line in out.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        parts = line.split()
        if len(parts) >= 2 and parts[0].isdigit():
            hist.append((int(parts[0]), int(parts[1])))
    total = sum(c for _, c in hist)
    seen = 0
    for us, count in hist:
        seen += count
        if seen >= 0.99 * total:
            return float(us)
    return float("nan")


def runq_p99_us(variant, secs):
    binary, *extra = variant.split()
    out = subprocess.run(
        [binary, "run", "--work-type", "TimerLatency", "--workers", "1",
         "--duration", str(secs), "--no-cgroups", "--json", *extra],
        capture_output=True, text=True).stdout
    return json.loads(out)["groups"][0]["wake_p99_ns"] / 1e3


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 5
    variants = sys.argv[3:] or ["target/release/runq"]
    cts = []
    rqs = {v: [] for v in variants}
    ratios = {v: [] for v in variants}
    for r in range(rounds):
        ct = cyclictest_p99_us(secs)
        cts.append(ct)
        line = f"round {r}: cyclictest p99 {ct:.0f} us"
        for v in variants:
            rq = runq_p99_us(v, secs)
            rqs[v].append(rq)
            ratios[v].append(rq / ct)
            line += f" | [{v}] p99 {rq:.0f} us, ratio {rq / ct:.2f}"
        print(line, flush=True)
    print(f"median: cyclictest p99 {median(cts):.0f} us")
    for v in variants:
        print(f"median: [{v}] p99 {median(rqs[v]):.0f} us, "
              f"median ratio to cyclictest {median(ratios[v]):.2f}")


if __name__ == "__main__":
    main()
