#!/usr/bin/env python3
"""Drives examples/libuv-server from several connections at once and checks
what the server promises: every request is answered, and the requests of one
key never overlap in time, across all server instances.

    loop-client.py PORT[,PORT...] KEY:COUNT[,KEY:COUNT...] CONNECTIONS
"""
import socket
import sys
import threading


def main():
    ports = [int(p) for p in sys.argv[1].split(",")]
    want = {}
    for kc in sys.argv[2].split(","):
        k, c = kc.split(":")
        want[k] = int(c)
    nconn = int(sys.argv[3])
    # Spread the requests over the connections, round robin, keys mixed.
    work = [k for k, c in want.items() for _ in range(c)]
    per = [[] for _ in range(nconn)]
    for i, k in enumerate(work):
        per[i % nconn].append(k)
    answers, errors = [], []
    lock = threading.Lock()

    def run(i):
        s = socket.create_connection(("127.0.0.1", ports[i % len(ports)]))
        s.settimeout(60)
        s.sendall("".join(k + "\n" for k in per[i]).encode())
        # All sent: a half-close, which must not cost any answer.
        s.shutdown(socket.SHUT_WR)
        buf = b""
        while buf.count(b"\n") < len(per[i]):
            data = s.recv(4096)
            if not data:
                break
            buf += data
        s.close()
        with lock:
            for line in buf.decode().splitlines():
                f = line.split()
                if len(f) == 4:
                    answers.append((f[0], int(f[1]), int(f[2]), int(f[3])))
                else:
                    errors.append(line)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(nconn)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = True
    if errors:
        print("errors:", errors[:5])
        ok = False
    for k, c in want.items():
        got = sorted((a for a in answers if a[0] == k), key=lambda a: a[2])
        if len(got) != c:
            print(f"{k}: {len(got)} of {c} answered")
            ok = False
        for a, b in zip(got, got[1:]):
            if b[2] < a[3]:
                print(f"{k}: overlap: {a} and {b}")
                ok = False
            if b[1] <= a[1]:
                print(f"{k}: token did not grow: {a} then {b}")
                ok = False
    print(f"{len(answers)} answered, {len(errors)} errors")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
