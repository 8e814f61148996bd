#!/usr/bin/env python3
# starve.py PATTERN SECONDS [N]: how long processes wait for a CPU. Every
# 2 ms it reads /proc/PID/task/*/schedstat of every process whose command
# line contains PATTERN (looking for new ones until N are found: reading a
# command line waits for that process's mmap_lock, which an EAL start
# holds). A process starved for S ms when for S ms none of its threads ran
# and, when one did, it had waited on a run queue for at least half of it:
# runnable, not asleep. Run it at SCHED_FIFO (chrt -f 2 python3 ...) so its
# own samples are on time. Used for the shared soak (docs/testing.md):
#   chrt -f 2 python3 test/bench/starve.py "test/soak --server" 20 16
import os, sys, time, collections
pat, secs = sys.argv[1], float(sys.argv[2])
want = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 30
def procs():
    out = {}
    for p in os.listdir('/proc'):
        if not p.isdigit(): continue
        try: cl = open(f'/proc/{p}/cmdline','rb').read().replace(b'\0',b' ').decode()
        except OSError: continue
        if pat in cl and 'starve.py' not in cl: out[int(p)] = cl
    return out
def read(pid):
    r = {}
    for t in os.listdir(f'/proc/{pid}/task'):
        a = open(f'/proc/{pid}/task/{t}/schedstat').read().split()
        r[t] = (int(a[0]), int(a[1]))
    return r
ps = procs(); t_end = time.monotonic() + secs; last_scan = time.monotonic()
prev = {}; since = {}; spells = collections.defaultdict(list); samples = 0; maxgap = 0; lastt = None
while time.monotonic() < t_end:
    now = time.monotonic()
    if lastt: maxgap = max(maxgap, now - lastt)
    lastt = now; samples += 1
    # reading a cmdline waits for that process's mmap_lock (an EAL start
    # holds it): scan only until the programs are all there
    if now - last_scan > 2 and len(ps) < want: ps = procs(); last_scan = now
    for pid in list(ps):
        try: cur = read(pid)
        except OSError: ps.pop(pid, None); prev.pop(pid, None); continue
        if pid in prev:
            ran = [t for t in cur if t in prev[pid] and cur[t][0] != prev[pid][t][0]]
            if ran:
                spell = now - since[pid]
                dly = max((cur[t][1] - prev[pid][t][1]) / 1e9 for t in ran)
                if spell > 0.02 and dly >= spell / 2: spells[pid].append(min(spell, dly))
                since[pid] = now; prev[pid] = cur
            # else: keep the last state in which a thread ran
        else:
            prev[pid] = cur; since[pid] = now
    time.sleep(0.002)
allsp = sorted(d for v in spells.values() for d in v)
print(f"{len(prev)} processes ({pat!r}), {secs:.0f} s, {samples} samples (longest gap between samples {maxgap*1000:.1f} ms)")
print(f"starved spells > 20 ms: {len(allsp)}, > 67 ms: {sum(d > 0.0671 for d in allsp)}, > 200 ms: {sum(d > 0.2 for d in allsp)}"
      + (f"; longest {allsp[-1]*1000:.0f} ms, processes with one > 67 ms: {sum(1 for v in spells.values() if v and max(v) > 0.0671)}" if allsp else ""))
