#!/usr/bin/env python3
"""Concurrent HTTP/1.1 requests through several nginx instances, for the
nginx tests and benchmark: every request on its own connection, spread
round-robin over the targets, its key chosen in turn from KEYS keys. One
JSON line on stdout: how many were sent, the status codes, connection
errors, latency p50/p99 and the wall time.

  nginx-load.py --targets 127.0.0.1:8001,127.0.0.1:8002 \\
      --path '/w/k{key}?delay_ms=20' --keys 100 --requests 1000 \\
      --concurrency 1000 [--seconds S] [--method GET] [--timeout 60]

--seconds S: instead of --requests, keep --concurrency requests going
for S seconds. --header 'Name: value' (repeatable) adds headers.
--gap-ms G: each worker pauses G ms between its requests (latency runs:
the lock's release, sent after a response, is then done before the next
request, as for requests that do not come back to back).
"""
import argparse
import asyncio
import json
import resource
import sys
import time


def percentile(xs, q):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def one(host, port, method, path, headers, timeout):
    t0 = time.monotonic()
    writer = None
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port), timeout)
        req = "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n%s\r\n" % (
            method, path, host, "".join(h + "\r\n" for h in headers))
        writer.write(req.encode())
        data = await asyncio.wait_for(reader.read(), timeout)
        parts = data.split(b" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        return status, (time.monotonic() - t0) * 1000.0
    except (OSError, asyncio.TimeoutError) as e:
        return "error:" + type(e).__name__, (time.monotonic() - t0) * 1000.0
    finally:
        if writer is not None:
            writer.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", required=True)
    ap.add_argument("--path", required=True)
    ap.add_argument("--keys", type=int, default=1)
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--method", default="GET")
    ap.add_argument("--header", action="append", default=[])
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--gap-ms", type=float, default=0,
                    help="each worker's pause between two requests")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, max(soft, a.concurrency * 2 + 64))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    targets = []
    for t in a.targets.split(","):
        h, p = t.rsplit(":", 1)
        targets.append((h, int(p)))
    statuses, lat = {}, []
    counter = [0]
    t_end = time.monotonic() + a.seconds if a.seconds > 0 else None

    async def worker():
        while True:
            i = counter[0]
            if t_end is None and i >= a.requests:
                return
            if t_end is not None and time.monotonic() >= t_end:
                return
            counter[0] += 1
            host, port = targets[i % len(targets)]
            path = a.path.replace("{key}", str(i % a.keys)).replace(
                "{i}", str(i))
            st, ms = await one(host, port, a.method, path, a.header,
                               a.timeout)
            statuses[str(st)] = statuses.get(str(st), 0) + 1
            lat.append(ms)
            if a.gap_ms > 0:
                await asyncio.sleep(a.gap_ms / 1000.0)

    t0 = time.monotonic()
    n = a.concurrency if t_end is not None else min(a.concurrency, a.requests)
    await asyncio.gather(*(worker() for _ in range(n)))
    secs = time.monotonic() - t0
    print(json.dumps({
        "sent": counter[0], "status": statuses,
        "ok": statuses.get("200", 0),
        "p50_ms": round(percentile(lat, 0.5), 2),
        "p99_ms": round(percentile(lat, 0.99), 2),
        "seconds": round(secs, 3),
        "per_s": round(counter[0] / secs, 1) if secs > 0 else 0}))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
