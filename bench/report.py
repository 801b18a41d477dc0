#!/usr/bin/python3
# Reads bench/compare's results.jsonl; prints the table of figures and the
# goal ratios of issue 3; draws chart.png with gnuplot.
#   report.py RESULTS.jsonl OUTDIR NOTE
import json
import os
import platform
import subprocess
import sys
import time

res, outdir, note = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [json.loads(l) for l in open(res) if l.strip()]


def pick(peer, scenario, **match):
    for r in rows:
        if r.get("peer") == peer and r["scenario"] == scenario and \
                all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def best(peer, scenario, key):
    rs = [r for r in rows if r.get("peer") == peer and r["scenario"] == scenario]
    return max(rs, key=lambda r: r.get(key, 0)) if rs else None


def f(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float):
        v = ("%.0f" % v) if abs(v) >= 100 else ("%.3g" % v)
    return "%s%s" % (v, unit)


def g(r, k):
    return None if r is None else r.get(k)


cpu = "?"
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
except OSError:
    pass
print("zklock benchmark, %s, %s, %d cores (%s), server %s" % (
    time.strftime("%Y-%m-%d"), platform.node(), os.cpu_count(), cpu, note))
print()
raws = [r for r in rows if r.get("peer") == "raw" and r["scenario"] == "raw"]
raw = best("raw", "raw", "pairs_per_s")
rawl = best("raw", "raw-list", "pairs_per_s")
cl = pick("raw", "create-latency")
print("raw server, create+delete pairs/s (in flight x sessions):")
print("  " + ", ".join("%s at %dx%d" % (f(r["pairs_per_s"]), r["inflight"], r.get("sessions", 1))
                       for r in raws))
print("  ceiling (best of those): %s; create p50 %s us, p99 %s us" % (
    f(g(raw, "pairs_per_s")), f(g(cl, "p50_us")), f(g(cl, "p99_us"))))
print("  a lock cycle's three requests (create, list, delete; each pair in its own")
print("  directory) with no lock logic, best: %s at %sx%s" % (
    f(g(rawl, "pairs_per_s")), g(rawl, "inflight"), g(rawl, "sessions")))
print()
print("%-34s %12s %12s %12s" % ("", "zklock", "Curator", "Kazoo"))


def line(label, key, scen, **m):
    vals = []
    for p in ("zklock", "curator", "kazoo"):
        vals.append(f(g(pick(p, scen, **m), key)))
    print("%-34s %12s %12s %12s" % (label, *vals))


line("serial acquire p50 (us)", "acquire_p50_us", "serial")
line("serial acquire p99 (us)", "acquire_p99_us", "serial")
line("serial cycles/s", "cycles_per_s", "serial")
zt = best("zklock", "throughput", "cycles_per_s")
ct = best("curator", "throughput", "cycles_per_s")
kt = best("kazoo", "throughput", "cycles_per_s")
print("%-34s %12s %12s %12s" % ("throughput, best cycles/s", f(g(zt, "cycles_per_s")),
                                 f(g(ct, "cycles_per_s")), f(g(kt, "cycles_per_s"))))
print("%-34s %12s %12s %12s" % ("  at (in flight x sessions / thr.)",
                                 "%sx%s" % (g(zt, "inflight"), g(zt, "sessions")),
                                 f(g(ct, "threads")), f(g(kt, "threads"))))
print("%-34s %12s %12s %12s" % ("  acquire p50 / p99 (us)",
                                 "%s/%s" % (f(g(zt, "acquire_p50_us")), f(g(zt, "acquire_p99_us"))),
                                 "%s/%s" % (f(g(ct, "acquire_p50_us")), f(g(ct, "acquire_p99_us"))),
                                 "%s/%s" % (f(g(kt, "acquire_p50_us")), f(g(kt, "acquire_p99_us")))))
print("%-34s %12s %12s %12s" % ("  client CPU s per 1k cycles", f(g(zt, "cpu_s_per_1k_cycles")),
                                 f(g(ct, "cpu_s_per_1k_cycles")), f(g(kt, "cpu_s_per_1k_cycles"))))
print("%-34s %12s" % ("  requests per cycle", f(g(zt, "requests_per_cycle"))))
print()
print("zklock throughput, cycles/s (1,000+ locks; in flight x sessions, procs):")
print("  " + ", ".join("%s at %dx%d%s" % (f(r["cycles_per_s"]), r["inflight"], r.get("sessions", 1),
                                          " (%d procs)" % r["procs"] if r.get("procs", 1) > 1 else "")
                       for r in rows if r.get("peer") == "zklock" and r["scenario"] == "throughput"))
print()
print("%-44s %10s %9s %8s %9s %8s" % ("handoff drain, one lock", "handoffs/s", "req/hand.",
                                      "lists/h.", "bytes in", "wake-ups"))
TLS_PEERS = ("zklock-tls", "raw-tls")
for r in rows:
    if r["scenario"] != "handoff" or r.get("peer") in TLS_PEERS:
        continue
    if r["peer"] == "zklock":
        what = "zklock, %d waiters, " % r["waiters"]
        if r.get("procs", 1) > 1:
            what += "%d processes" % r["procs"]
        elif r.get("sessions", 1) == r["waiters"]:
            what += "one session each"
        else:
            what += "%d session%s" % (r["sessions"], "s" if r["sessions"] > 1 else "")
        print("%-44s %10s %9s %8s %9s %8s" % (what, f(r["handoffs_per_s"]),
                                              f(r["requests_per_handoff"]),
                                              f(r["listings_per_handoff"]),
                                              f(r["bytes_in_per_handoff"]),
                                              f(r["wakeups_per_release"])))
    else:
        print("%-44s %10s" % ("%s, %d waiting threads" % (r["peer"].capitalize(), r["waiters"]),
                              f(r["handoffs_per_s"])))
print()
print("%-44s %10s %9s %8s" % ("semaphore drain, 10 leases", "grants/s", "req/grant", "wake-ups"))
for r in rows:
    if r["scenario"] == "semaphore":
        if r["peer"] == "zklock":
            print("%-44s %10s %9s %8s" % ("zklock, %d waiters, 1 session" % r["waiters"],
                                          f(r["grants_per_s"]), f(r["requests_per_grant"]),
                                          f(r["wakeups_per_grant"])))
        else:
            print("%-44s %10s" % ("%s, %d waiting threads" % (r["peer"].capitalize(), r["waiters"]),
                                  f(r["grants_per_s"])))
print("%-44s %10s %9s %8s" % ("read-mostly, 1 lock, writer every 100 ms", "reads/s", "req/read",
                              "writes/s"))
for r in rows:
    if r["scenario"] == "readmostly":
        print("%-44s %10s %9s %8s" % ("%s, %d readers" % (r["peer"], r["readers"]),
                                      f(r["read_grants_per_s"]),
                                      f(r.get("requests_per_read")), f(r["writes_per_s"])))
zm = [r for r in rows if r.get("peer") == "zklock" and r["scenario"] == "multilock"]
if zm or pick("curator", "multilock"):
    print("%-30s %13s %13s %13s %13s" % ("multi-lock, N free locks", "zklock",
                                         "raw creates", "raw +listing", "Curator"))
    print("%-30s %13s %13s %13s %13s" % ("  acquire p50 / p99 (us)", "", "N pipelined",
                                         "N pipelined", "MultiLock"))

    def pp(r, k50, k99):
        return "-" if r is None else "%s/%s" % (f(r.get(k50)), f(r.get(k99)))

    for n in sorted({r["locks"] for r in rows if r["scenario"] == "multilock"}):
        zr = pick("zklock", "multilock", locks=n)
        print("%-30s %13s %13s %13s %13s" % (
            "N = %d%s" % (n, ", %s req/acquire" % f(g(zr, "requests_per_acquire"))
                          if zr else ""),
            pp(zr, "acquire_p50_us", "acquire_p99_us"),
            pp(pick("raw", "raw-batch", creates=n), "create_batch_p50_us", "create_batch_p99_us"),
            pp(pick("raw", "raw-batch-list", creates=n), "create_batch_p50_us",
               "create_batch_p99_us"),
            pp(pick("curator", "multilock", locks=n), "acquire_p50_us", "acquire_p99_us")))
print()
for r in rows:
    if "error" in r:
        print("FAILED %s %s: %s" % (r.get("peer", ""), r["scenario"], r["error"]))
        continue
    if r["scenario"] == "waiters":
        print("waiters %d over %d sessions%s: %s B/waiter, enqueue %s s, drain %s s,\n"
              "  loop busy between turns p99 %s ms (max %s); wall gap p99 %s ms (max %s); "
              "acquired %d" % (
                  r["count"], r["sessions"], " + server restart" if r.get("restarted") else "",
                  f(r["heap_bytes_per_waiter"]), f(r["enqueue_s"]), f(r["drain_s"]),
                  f(r["loop_stall_p99_ms"]), f(r["loop_stall_max_ms"]),
                  f(r.get("loop_wall_gap_p99_ms")), f(r.get("loop_wall_gap_max_ms")),
                  r["acquired"]))
        if "heap_lib_bytes_per_waiter" in r:
            print("  of the heap per waiter, zklock's own: %s B (holders in another process)" %
                  f(r["heap_lib_bytes_per_waiter"]))
    if r["scenario"] == "burst":
        print("burst of %d acquires in one turn over %d locks, %d held: %s B/waiter (live heap),\n"
              "  loop busy p99 %s ms (max %s); outstanding max %d (window %d); held LOST %d,\n"
              "  SUSPENDED %d; acquired %d (twice %d); enqueue %s s, drain %s s" % (
                  r["count"], r["locks"], r["held"], f(r["heap_bytes_per_waiter"]),
                  f(r["loop_busy_p99_ms"]), f(r["loop_busy_max_ms"]), r["outstanding_max"],
                  r["window"], r["held_lost"], r["held_suspended"], r["acquired"],
                  r["acquired_twice"], f(r["enqueue_s"]), f(r["drain_s"])))
        if "heap_lib_bytes_per_waiter" in r:
            print("  of the heap per waiter, zklock's own: %s B" %
                  f(r["heap_lib_bytes_per_waiter"]))
print()
print("Peers: Curator 5.4 InterProcessMutex and Kazoo 2.8 Lock block one thread per")
print("acquire: throughput with 1/8/16/32 (Curator) and 1/8 (Kazoo) threads, best shown;")
print("handoff with one thread per waiter, one session. zklock: one thread per process.")
if zm:
    print("Multi-locks: one client, one round at a time; Curator's InterProcessMultiLock")
    print("takes its InterProcessMutex one after another, zklock sends every create at once.")
print()


def ratio(a, b):
    return None if a in (None, 0) or b in (None, 0) else a / b


# TLS (issue 24): the same scenarios against a second server of the run
# whose client port is TLS only, beside the plain rows.
tls_rows = [r for r in rows if r.get("peer") in TLS_PEERS]
rc_plain = pick("zklock", "reconnect")
rc_tls = pick("zklock-tls", "reconnect")
t_cl = pick("raw-tls", "create-latency")
t_raw = pick("raw-tls", "raw")
t_zs = pick("zklock-tls", "serial")
t_tp = pick("zklock-tls", "throughput")
t_ho = pick("zklock-tls", "handoff", waiters=1000, sessions=1)
p_raw = pick("raw", "raw", inflight=1000, sessions=4)
p_zs = pick("zklock", "serial")
p_tp = pick("zklock", "throughput", inflight=1000, sessions=4, procs=1)
p_ho = pick("zklock", "handoff", waiters=1000, sessions=1, procs=1)
if tls_rows or rc_plain:
    print("TLS: a second server of this run, TLS-only client port (RSA-2048, TLS 1.2)")
    print("%-44s %12s %12s %10s" % ("", "plain", "TLS", "TLS/plain"))

    def tl(label, p, t, key, key2=None):
        pv, tv = g(p, key), g(t, key)
        if key2:
            ps = "%s/%s" % (f(pv), f(g(p, key2))) if p else "-"
            ts = "%s/%s" % (f(tv), f(g(t, key2))) if t else "-"
        else:
            ps, ts = f(pv), f(tv)
        print("%-44s %12s %12s %10s" % (label, ps, ts, f(ratio(tv, pv))))

    tl("raw create p50/p99 (us), one at a time", cl, t_cl, "p50_us", "p99_us")
    tl("serial acquire p50/p99 (us)", p_zs, t_zs, "acquire_p50_us", "acquire_p99_us")
    tl("raw create+delete pairs/s, 1000x4", p_raw, t_raw, "pairs_per_s")
    tl("zklock throughput cycles/s, 1000x4", p_tp, t_tp, "cycles_per_s")
    tl("  acquire p50/p99 (us)", p_tp, t_tp, "acquire_p50_us", "acquire_p99_us")
    tl("  client CPU s per 1k cycles", p_tp, t_tp, "cpu_s_per_1k_cycles")
    tl("handoff, 1000 waiters, 1 session, /s", p_ho, t_ho, "handoffs_per_s")
    tl("  requests / bytes in per handoff", p_ho, t_ho, "requests_per_handoff",
       "bytes_in_per_handoff")
    n_rc = g(rc_tls, "clients") or g(rc_plain, "clients") or 100
    print("reconnect: %s clients of one loop, each holding a lock; the server" % n_rc)
    print("  restarts, every client reconnects (over TLS: a handshake each)")
    print("%-44s %12s %12s" % ("", "plain", "TLS"))

    def rl(label, key, key2=None):
        def one(r):
            if r is None:
                return "-"
            return "%s/%s" % (f(r.get(key)), f(r.get(key2))) if key2 else f(r.get(key))
        print("%-44s %12s %12s" % (label, one(rc_plain), one(rc_tls)))

    rl("  connect, all at once (s)", "connect_s")
    rl("    loop busy p99/max (ms)", "connect_busy_p99_ms", "connect_busy_max_ms")
    rl("    loop turn p99/longest (ms)", "connect_turn_p99_ms", "connect_turn_max_ms")
    rl("  server outage (s)", "outage_s")
    rl("  reconnect, port open to all restored (s)", "reconnect_s")
    rl("    loop busy p99/max (ms)", "reconnect_busy_p99_ms", "reconnect_busy_max_ms")
    rl("    loop turn p99/longest (ms)", "reconnect_turn_p99_ms", "reconnect_turn_max_ms")
    rl("    wall gap p99/max (ms)", "reconnect_gap_p99_ms", "reconnect_gap_max_ms")
    rl("  holds restored/lost", "restored", "lost")
    rl("  sessions renewed", "sessions_renewed")
    why = sorted({r["error"] for r in tls_rows if "error" in r})
    for w in why:
        print("  TLS rows failed: %s" % w)
    print()


def zh(w, s, procs=1):
    return pick("zklock", "handoff", waiters=w, sessions=s, procs=procs)


goals = []
zs = pick("zklock", "serial")
r1 = ratio(g(zs, "acquire_p50_us"), g(cl, "p50_us"))
goals.append(("serial acquire p50 / create p50", r1, "<= 1.15", r1 is not None and r1 <= 1.15))
# Many processes, one lock (issue 10).
e1k, e100 = zh(1000, 1000), zh(100, 100)
rq = g(e1k, "requests_per_handoff")
goals.append(("1k waiters, 1 session each: requests/handoff", rq, "<= 2",
              rq is not None and rq <= 2.0001))
c1k = pick("curator", "handoff", waiters=1000)
h = ratio(g(e1k, "handoffs_per_s"), g(c1k, "handoffs_per_s"))
goals.append(("  handoffs/s / Curator 1k threads", h, ">= 1.5", h is not None and h >= 1.5))
d = ratio(g(e1k, "handoffs_per_s"), g(e100, "handoffs_per_s"))
goals.append(("  handoffs/s at 1k / at 100 waiters", d, ">= 0.7", d is not None and d >= 0.7))
p300, s300 = zh(300, 300, 300), zh(300, 300)
pr = ratio(g(p300, "handoffs_per_s"), g(s300, "handoffs_per_s"))
goals.append(("--procs 300 / --sessions 300 handoffs/s", pr, ">= 0.7", pr is not None and pr >= 0.7))
# In one session (issues 3 and 4), as before.
one = sorted([r for r in rows if r["scenario"] == "handoff" and r["peer"] == "zklock"
              and r.get("sessions", 1) == 1 and r.get("procs", 1) == 1],
             key=lambda r: r["waiters"])
if len(one) >= 2:
    rb = ratio(one[-1]["bytes_in_per_handoff"], one[0]["bytes_in_per_handoff"])
    goals.append(("in-session bytes/handoff at %d / at %d" % (one[-1]["waiters"], one[0]["waiters"]),
                  rb, "flat (<= 1.5)", rb is not None and rb <= 1.5))
zhs = [r for r in rows if r["scenario"] == "handoff" and r["peer"] == "zklock"]
if zhs:
    wk = max(r["wakeups_per_release"] for r in zhs)
    goals.append(("wake-ups per release (worst)", wk, "== 1", abs(wk - 1) < 0.01))
wt = [r for r in rows if r["scenario"] == "waiters"]
if wt:
    w = max(wt, key=lambda r: r["heap_bytes_per_waiter"])
    goals.append(("live heap bytes per waiter (worst)", w["heap_bytes_per_waiter"], "<= 400",
                  w["heap_bytes_per_waiter"] <= 400))
    s = max(r["loop_stall_p99_ms"] for r in wt)
    goals.append(("loop stall p99 ms (worst)", s, "< 5", s < 5))
# A hot lock over S sessions of one thread (issue 20).
hot = {s: zh(10000, s) for s in (1, 2, 4, 8)}
if hot[1] and hot[8]:
    rb8 = ratio(g(hot[8], "bytes_in_per_handoff"), g(hot[1], "bytes_in_per_handoff"))
    goals.append(("hot 10k: bytes/handoff S=8 / S=1", rb8, "<= 1.5", rb8 is not None and rb8 <= 1.5))
    rh8 = ratio(g(hot[8], "handoffs_per_s"), g(hot[1], "handoffs_per_s"))
    goals.append(("hot 10k: handoffs/s S=8 / S=1", rh8, ">= 0.7", rh8 is not None and rh8 >= 0.7))
    lm = max(g(hot[s], "listings_per_handoff") or 0 for s in hot if hot[s])
    goals.append(("hot 10k: listings/handoff (worst S)", lm, "== 0", lm == 0))
    wm = max(g(hot[s], "wakeups_per_release") or 0 for s in hot if hot[s])
    goals.append(("hot 10k: wake-ups/release (worst S)", wm, "<= 1.05", wm <= 1.05))
bu = [r for r in rows if r["scenario"] == "burst" and "error" not in r]
if not bu and any(r["scenario"] == "burst" for r in rows):
    goals.append(("burst: finished", 0.0, "== 1", False))
if bu:
    b = bu[-1]
    goals.append(("burst: holds told LOST or SUSPENDED", b["held_lost"] + b["held_suspended"],
                  "== 0", b["held_lost"] + b["held_suspended"] == 0))
    goals.append(("burst: outstanding max / window", b["outstanding_max"] / b["window"], "<= 1",
                  b["outstanding_max"] <= b["window"]))
    goals.append(("burst: loop busy p99 ms", b["loop_busy_p99_ms"], "< 5", b["loop_busy_p99_ms"] < 5))
    goals.append(("burst: live heap bytes per waiter", b["heap_bytes_per_waiter"], "<= 400",
                  b["heap_bytes_per_waiter"] <= 400))
# Throughput.
r2a = ratio(g(zt, "cycles_per_s"), g(raw, "pairs_per_s"))
goals.append(("throughput best / raw ceiling", r2a, ">= 0.8", r2a is not None and r2a >= 0.8))
r2l = ratio(g(zt, "cycles_per_s"), g(rawl, "pairs_per_s"))
goals.append(("throughput best / raw create+list+delete", r2l, ">= 0.9",
              r2l is not None and r2l >= 0.9))
c8 = pick("curator", "throughput", threads=8)
cbest = max((r for r in rows if r.get("peer") == "curator" and r["scenario"] == "throughput"
             and "error" not in r), key=lambda r: r["cycles_per_s"], default=None)
r2b = ratio(g(zt, "cycles_per_s"), g(cbest, "cycles_per_s"))
goals.append(("throughput best / Curator best (%s thr.)" % (cbest or {}).get("threads", "-"),
              r2b, "(info)", r2b is not None))
rc = ratio(g(zt, "cpu_s_per_1k_cycles"), g(c8 or ct, "cpu_s_per_1k_cycles"))
goals.append(("CPU per 1k cycles / Curator", rc, "<= 0.333", rc is not None and rc <= 1 / 3))
zs = pick("zklock", "semaphore", waiters=1000)
cs = pick("curator", "semaphore", waiters=1000)
rs = ratio(g(zs, "grants_per_s"), g(cs, "grants_per_s"))
goals.append(("semaphore 1k waiters: grants/s / Curator", rs, ">= 3", rs is not None and rs >= 3))
zs1 = pick("zklock", "semaphore", waiters=100)
cs1 = pick("curator", "semaphore", waiters=100)
rs1 = ratio(g(zs1, "grants_per_s"), g(cs1, "grants_per_s"))
goals.append(("  (100 waiters) / Curator", rs1, "(info)", rs1 is not None and rs1 >= 3))
zr = pick("zklock", "readmostly")
cr = pick("curator", "readmostly")
rr = ratio(g(zr, "read_grants_per_s"), g(cr, "read_grants_per_s"))
goals.append(("read-mostly reads/s / Curator", rr, ">= 5", rr is not None and rr >= 5))
# Multi-locks (issue 12): a free set costs about what its creates cost
# pipelined from one session.
for n in (10, 100):
    zmn = pick("zklock", "multilock", locks=n)
    rm = ratio(g(zmn, "acquire_p50_us"), g(pick("raw", "raw-batch", creates=n),
                                          "create_batch_p50_us"))
    goals.append(("multi-lock N=%d p50 / raw N creates p50" % n, rm, "<= 1.5",
                  rm is not None and rm <= 1.5))
    rml = ratio(g(zmn, "acquire_p50_us"), g(pick("raw", "raw-batch-list", creates=n),
                                           "create_batch_p50_us"))
    goals.append(("  (/ raw N creates+listings p50)", rml, "(bound)",
                  rml is not None and rml <= 1.5))
zm100 = pick("zklock", "multilock", locks=100)
cm = ratio(g(pick("curator", "multilock", locks=100), "acquire_p50_us"),
           g(zm100, "acquire_p50_us"))
goals.append(("Curator multi-lock N=100 p50 / zklock p50", cm, ">= 8", cm is not None and cm >= 8))
ml = [r for r in rows if r["scenario"] == "multilock"]
if ml:
    left = sum(max(r.get("nodes_left", 0), 0) + (r.get("nodes_left", 0) < 0) for r in ml)
    goals.append(("multi-lock nodes left after the runs", float(left), "== 0", left == 0))
# Every scenario: no failure, every waiter served.
zk_rows = [r for r in rows if r.get("peer") == "zklock"]
fails = sum(r.get("failures", 0) for r in zk_rows)
short = sum(1 for r in zk_rows if r["scenario"] in ("handoff", "waiters")
            and r.get("acquired") != r.get("waiters", r.get("count")))
goals.append(("failures, all zklock scenarios", float(fails), "== 0", fails == 0))
goals.append(("waiters not acquired exactly once", float(short), "== 0", short == 0))
# TLS goals (issue 24), after the others.
if tls_rows or rc_plain:
    tr = ratio(g(t_zs, "acquire_p50_us"), g(t_cl, "p50_us"))
    goals.append(("TLS: serial acquire p50 / create p50", tr, "<= 1.15",
                  tr is not None and tr <= 1.15))
    tt = ratio(g(t_tp, "cycles_per_s"), g(p_tp, "cycles_per_s"))
    goals.append(("TLS: throughput 1000x4 / plain 1000x4", tt, ">= 0.8",
                  tt is not None and tt >= 0.8))
    th = ratio(g(t_ho, "handoffs_per_s"), g(p_ho, "handoffs_per_s"))
    goals.append(("TLS: handoffs/s 1k waiters / plain", th, "(info)", th is not None))
    tb = g(rc_tls, "reconnect_busy_p99_ms")
    goals.append(("TLS reconnect of 100 holders: busy p99 ms", tb, "< 5",
                  tb is not None and tb < 5))
    goals.append(("  longest loop turn ms", g(rc_tls, "reconnect_turn_max_ms"), "(info)",
                  True))
    pb = g(rc_plain, "reconnect_busy_p99_ms")
    goals.append(("plain reconnect of 100 holders: busy p99 ms", pb, "< 5",
                  pb is not None and pb < 5))
    goals.append(("  longest loop turn ms", g(rc_plain, "reconnect_turn_max_ms"), "(info)",
                  True))
    tf = sum(r.get("failures", 0) for r in tls_rows) + sum(1 for r in tls_rows if "error" in r)
    goals.append(("TLS rows failed or failures", float(tf), "== 0", tf == 0))
print("%-44s %10s %14s  %s" % ("goal", "measured", "target", "met"))
for name, v, target, met in goals:
    print("%-44s %10s %14s  %s" % (name, f(v) if v is not None else "-", target,
                                    "n/a" if v is None else "yes" if met else "NO"))

# Chart: handoff rate against queue depth; throughput against in-flight
# attempts (zklock) or threads (peers).
dat = os.path.join(outdir, "chart.dat")
with open(dat, "w") as d:
    for peer in ("zklock", "curator", "kazoo"):
        d.write("# %s handoff\n" % peer)
        for r in sorted([r for r in rows if r["peer"] == peer and r["scenario"] == "handoff"
                         and r.get("sessions", 1) * 100 <= r["waiters"]],
                        key=lambda r: r["waiters"]):
            d.write("%d %f\n" % (r["waiters"], r["handoffs_per_s"]))
        d.write("\n\n")
    for peer in ("zklock", "curator", "kazoo"):
        d.write("# %s throughput\n" % peer)
        for r in sorted([r for r in rows if r["peer"] == peer and r["scenario"] == "throughput"
                         and r.get("sessions", 1) == 1 and r.get("procs", 1) == 1],
                        key=lambda r: r.get("inflight", r.get("threads", 0))):
            d.write("%d %f\n" % (r.get("inflight", r.get("threads", 0)), r["cycles_per_s"]))
        d.write("\n\n")
png = os.path.join(outdir, "chart.png")
gp = """set terminal pngcairo size 1100,450
set output '%s'
set multiplot layout 1,2
set logscale x
set grid
set key top right
set title 'Handoff rate vs queue depth (one lock, one session)'
set xlabel 'waiters queued'
set ylabel 'handoffs / s'
plot '%s' index 0 with linespoints lw 2 title 'zklock (1 thread)', \\
     '' index 1 with linespoints lw 2 title 'Curator (thread per waiter)', \\
     '' index 2 with linespoints lw 2 title 'Kazoo (thread per waiter)'
set title 'Lock cycles/s vs concurrency (1,000 locks)'
set xlabel 'attempts in flight (zklock) / threads (peers)'
set ylabel 'acquire+release cycles / s'
set key bottom right
plot '%s' index 3 with linespoints lw 2 title 'zklock (1 thread)', \\
     '' index 4 with linespoints lw 2 title 'Curator', \\
     '' index 5 with linespoints lw 2 title 'Kazoo', \\
     %f with lines dt 2 lc rgb 'black' title 'raw server ceiling'
unset multiplot
""" % (png, dat, dat, g(raw, "pairs_per_s") or 0)
try:
    subprocess.run(["gnuplot"], input=gp.encode(), check=True)
    print("\nchart: %s" % png)
except (OSError, subprocess.CalledProcessError) as e:
    print("\nchart not drawn: %s" % e)
