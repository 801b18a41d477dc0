#!/usr/bin/env python3
# bench/guard-kill.py ZKLOCK HOSTS N ROUNDS: the time from SIGKILL of
# zklock (holding a lock while its command runs N background sleeps,
# half of them under a double-forked setsid shell) to every process of
# the command's tree dead (a zombie or gone), and reaped (gone): what the
# guard process (tools/guard.c) takes to end the tree once zklock is
# gone. One JSON line, in milliseconds.
import json, os, shutil, sys, tempfile, time, subprocess, statistics
zk, hosts, n, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = tempfile.mkdtemp(prefix="zklock-guard-kill.")
def state(pid):
    try:
        s = open("/proc/%d/stat" % pid).read()
        return s.rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None
dead, gone = [], []
for r in range(rounds):
    pf = os.path.join(d, "pids")
    if os.path.exists(pf): os.unlink(pf)
    # n background sleeps (half of them in a setsid'd double-forked shell)
    body = ('i=0; while [ $i -lt %d ]; do sleep 300 & echo $! >> %s; i=$((i+1)); done; '
            '(setsid sh -c \'i=0; while [ $i -lt %d ]; do sleep 300 & echo $! >> %s; i=$((i+1)); done; echo $$ >> %s; wait\' &); '
            'echo $$ >> %s; wait') % (n // 2, pf, n - n // 2, pf, pf, pf)
    p = subprocess.Popen([zk, "run", "-s", hosts, "--session-timeout", "2000", "/zklock-guard-kill/%d-%d" % (os.getpid(), r), "--", "sh", "-c", body],
                         stderr=subprocess.DEVNULL)
    while not os.path.exists(pf) or len(open(pf).read().split()) < n + 2:
        time.sleep(0.01)
    pids = [int(x) for x in open(pf).read().split()]
    time.sleep(0.2)
    t0 = time.monotonic()
    os.kill(p.pid, 9)
    t_dead = None
    while True:
        st = [state(x) for x in pids]
        if t_dead is None and all(s in (None, "Z", "X") for s in st):
            t_dead = time.monotonic() - t0
        if all(s is None for s in st):
            break
    t_gone = time.monotonic() - t0
    p.wait()
    dead.append(t_dead * 1000); gone.append(t_gone * 1000)
shutil.rmtree(d)
print(json.dumps({"processes": n + 2, "rounds": rounds,
                  "dead_median_ms": round(statistics.median(dead), 2),
                  "dead_max_ms": round(max(dead), 2),
                  "reaped_median_ms": round(statistics.median(gone), 2),
                  "reaped_max_ms": round(max(gone), 2)}))
