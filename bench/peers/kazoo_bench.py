#!/usr/bin/python3
# Kazoo's Lock on the benchmark's scenarios, for bench/compare. One JSON
# line per run on stdout, the same keys as zklock-bench. Needs Debian's
# python3-kazoo (run with /usr/bin/python3).
#
#   kazoo_bench.py HOSTS serial N
#   kazoo_bench.py HOSTS throughput LOCKS THREADS SECONDS
#   kazoo_bench.py HOSTS handoff WAITERS
import json
import os
import sys
import threading
import time
import traceback

from kazoo.client import KazooClient


def pct(v, p):
    if not v:
        return 0
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def main():
    hosts, sc = sys.argv[1], sys.argv[2]
    base = "/kazoo-bench/%d" % os.getpid()
    zk = KazooClient(hosts=hosts, timeout=15)
    zk.start()
    out = {"scenario": sc, "peer": "kazoo"}
    if sc == "serial":
        n = int(sys.argv[3])
        lock = zk.Lock(base + "/serial")
        lock.acquire()
        lock.release()
        lat = []
        t0 = time.monotonic()
        for _ in range(n):
            s = time.monotonic()
            lock.acquire()
            lat.append((time.monotonic() - s) * 1e6)
            lock.release()
        secs = time.monotonic() - t0
        out.update(n=n, acquire_p50_us=pct(lat, 50), acquire_p99_us=pct(lat, 99),
                   cycles_per_s=n / secs)
    elif sc == "throughput":
        # Each thread cycles over its own min(LOCKS/THREADS, 8) paths, each
        # taken once in that thread before the warm-up second, so no
        # measured cycle creates a path (zklock-bench also makes its paths
        # first). 1 path per thread measured the same as 8 (within noise);
        # 8 keeps more locks in play.
        locks, threads, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
        ppt = max(1, min(locks // threads, 8))
        state = {"measuring": False, "stop": False, "cycles": 0}
        lats = []
        mu = threading.Lock()
        ready = threading.Semaphore(0)

        def worker(tid):
            mine = []
            try:
                for i in range(ppt):
                    lk = zk.Lock("%s/tp-%d" % (base, tid * ppt + i))
                    lk.acquire()
                    lk.release()
                    mine.append(lk)
            except Exception:
                traceback.print_exc()
                os._exit(1)  # else main waits for it forever
            ready.release()
            k = 0
            while not state["stop"]:
                lk = mine[k % ppt]
                k += 1
                s = time.monotonic()
                lk.acquire()
                d = (time.monotonic() - s) * 1e6
                lk.release()
                if state["measuring"]:
                    with mu:
                        state["cycles"] += 1
                        lats.append(d)

        ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        for t in ts:
            t.start()
        for _ in ts:
            ready.acquire()
        time.sleep(1)
        c0 = time.process_time()
        state["measuring"] = True
        t0 = time.monotonic()
        time.sleep(seconds)
        state["measuring"] = False
        secs, c1 = time.monotonic() - t0, time.process_time()
        state["stop"] = True
        for t in ts:
            t.join()
        n = state["cycles"]
        out.update(locks=locks, threads=threads, cycles_per_s=n / secs,
                   acquire_p50_us=pct(lats, 50), acquire_p99_us=pct(lats, 99),
                   cpu_s_per_1k_cycles=(c1 - c0) * 1000.0 / n if n else 0,
                   paths_per_thread=ppt, warm=1)
    elif sc == "handoff":
        n = int(sys.argv[3])
        path = base + "/handoff"
        holder = zk.Lock(path)
        holder.acquire()
        done = threading.Semaphore(0)

        def waiter():
            lk = zk.Lock(path)
            lk.acquire()
            lk.release()
            done.release()

        ts = [threading.Thread(target=waiter, daemon=True) for _ in range(n)]
        t0q = time.monotonic()
        for t in ts:
            t.start()
        while len(zk.get_children(path)) < n + 1:
            time.sleep(0.02)
        enq = time.monotonic() - t0q
        t0 = time.monotonic()
        holder.release()
        for _ in range(n):
            done.acquire()
        secs = time.monotonic() - t0
        out.update(waiters=n, handoffs_per_s=n / secs, enqueue_s=enq)
    print(json.dumps(out))
    sys.stdout.flush()
    zk.stop()
    zk.close()
    os._exit(0)


main()
