// Curator InterProcessMutex on the benchmark's scenarios, for
// bench/compare. One JSON line per run on stdout, the same keys as
// zklock-bench. Threads: as many as suit Curator (it blocks one per
// waiting acquire).
//
//   java CuratorBench HOSTS serial N
//   java CuratorBench HOSTS throughput LOCKS THREADS SECONDS
//   java CuratorBench HOSTS handoff WAITERS
//   java CuratorBench HOSTS semaphore WAITERS LEASES
//   java CuratorBench HOSTS readmostly READERS WRITE_EVERY_MS SECONDS
//   java CuratorBench HOSTS multilock LOCKS ROUNDS
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.RetryNTimes;

public class CuratorBench {
    static String base = "/curator-bench/" + ProcessHandle.current().pid();

    static CuratorFramework client(String hosts) throws Exception {
        CuratorFramework cf = CuratorFrameworkFactory.newClient(
            hosts, 30000, 15000, new RetryNTimes(3, 200));
        cf.start();
        cf.blockUntilConnected(20, TimeUnit.SECONDS);
        return cf;
    }

    static double pct(long[] v, int n, double p) {
        if (n == 0) return 0;
        long[] c = Arrays.copyOf(v, n);
        Arrays.sort(c);
        int i = (int) Math.round(p / 100.0 * (n - 1));
        return c[Math.min(i, n - 1)] / 1000.0; // ns -> us
    }

    static double cpu() {
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        return os.getProcessCpuTime() / 1e9;
    }

    public static void main(String[] a) throws Exception {
        String hosts = a[0], sc = a[1];
        CuratorFramework cf = client(hosts);
        if (sc.equals("serial")) {
            int n = Integer.parseInt(a[2]);
            InterProcessMutex m = new InterProcessMutex(cf, base + "/serial");
            m.acquire(); m.release(); // path exists, as in service
            long[] lat = new long[n];
            long t0 = System.nanoTime();
            for (int i = 0; i < n; i++) {
                long s = System.nanoTime();
                m.acquire();
                lat[i] = System.nanoTime() - s;
                m.release();
            }
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.printf("{\"scenario\":\"serial\",\"peer\":\"curator\",\"n\":%d,"
                + "\"acquire_p50_us\":%.1f,\"acquire_p99_us\":%.1f,\"cycles_per_s\":%.1f}%n",
                n, pct(lat, n, 50), pct(lat, n, 99), n / secs);
        } else if (sc.equals("throughput")) {
            // Each thread cycles over its own min(LOCKS/THREADS, 8) paths,
            // each taken once in that thread before the warm-up second, so
            // no measured cycle creates a parent container (zklock-bench
            // also makes its paths first). The server reaps empty
            // containers once a minute at most; Curator remakes one on its
            // next acquire, a rare extra create. 1 path per thread measured
            // the same as 8 (within noise, 1-32 threads); 8 keeps more
            // locks in play.
            int locks = Integer.parseInt(a[2]), threads = Integer.parseInt(a[3]);
            double seconds = Double.parseDouble(a[4]);
            int ppt = Math.max(1, Math.min(locks / threads, 8));
            AtomicLong cycles = new AtomicLong();
            long[][] lat = new long[threads][];
            int[] nlat = new int[threads];
            volatile_flag.set(false);
            List<Thread> ts = new ArrayList<>();
            CountDownLatch warm = new CountDownLatch(threads);
            for (int t = 0; t < threads; t++) {
                final int id = t;
                lat[t] = new long[4_000_000 / threads];
                Thread th = new Thread(() -> {
                    List<InterProcessMutex> mine = new ArrayList<>();
                    try {
                        for (int i = 0; i < ppt; i++) {
                            InterProcessMutex m = new InterProcessMutex(cf, base + "/tp-" + (id * ppt + i));
                            m.acquire(); m.release(); // path and parents exist
                            mine.add(m);
                        }
                    } catch (Exception e) {
                        e.printStackTrace();
                        System.exit(1); // else main waits for it forever
                    }
                    warm.countDown();
                    try {
                        int k = 0;
                        while (!volatile_flag.get()) {
                            InterProcessMutex m = mine.get(k++ % ppt);
                            long s = System.nanoTime();
                            m.acquire();
                            long d = System.nanoTime() - s;
                            m.release();
                            if (measuring.get()) {
                                cycles.incrementAndGet();
                                if (nlat[id] < lat[id].length) lat[id][nlat[id]++] = d;
                            }
                        }
                    } catch (Exception e) { e.printStackTrace(); }
                });
                ts.add(th);
                th.start();
            }
            warm.await();
            Thread.sleep(1000); // warm-up
            double c0 = cpu();
            measuring.set(true);
            long t0 = System.nanoTime();
            Thread.sleep((long) (seconds * 1000));
            measuring.set(false);
            double secs = (System.nanoTime() - t0) / 1e9, c1 = cpu();
            volatile_flag.set(true);
            for (Thread th : ts) th.join();
            int tot = 0;
            for (int t = 0; t < threads; t++) tot += nlat[t];
            long[] all = new long[tot];
            int o = 0;
            for (int t = 0; t < threads; t++) { System.arraycopy(lat[t], 0, all, o, nlat[t]); o += nlat[t]; }
            long n = cycles.get();
            System.out.printf("{\"scenario\":\"throughput\",\"peer\":\"curator\",\"locks\":%d,\"threads\":%d,"
                + "\"cycles_per_s\":%.1f,\"acquire_p50_us\":%.1f,\"acquire_p99_us\":%.1f,"
                + "\"cpu_s_per_1k_cycles\":%.5f,\"paths_per_thread\":%d,\"warm\":1}%n",
                locks, threads, n / secs, pct(all, tot, 50), pct(all, tot, 99),
                n > 0 ? (c1 - c0) * 1000.0 / n : 0, ppt);
        } else if (sc.equals("handoff")) {
            int n = Integer.parseInt(a[2]);
            String path = base + "/handoff";
            InterProcessMutex holder = new InterProcessMutex(cf, path);
            holder.acquire();
            CountDownLatch done = new CountDownLatch(n);
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Thread th = new Thread(() -> {
                    try {
                        InterProcessMutex m = new InterProcessMutex(cf, path);
                        m.acquire();
                        m.release();
                        done.countDown();
                    } catch (Exception e) { e.printStackTrace(); }
                }, "w");
                th.setDaemon(true);
                ts.add(th);
                th.start();
            }
            long t0q = System.nanoTime();
            while (cf.getChildren().forPath(path).size() < n + 1) Thread.sleep(20);
            double enq = (System.nanoTime() - t0q) / 1e9;
            long t0 = System.nanoTime();
            holder.release();
            done.await();
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.printf("{\"scenario\":\"handoff\",\"peer\":\"curator\",\"waiters\":%d,"
                + "\"handoffs_per_s\":%.1f,\"enqueue_s\":%.2f}%n", n, n / secs, enq);
        } else if (sc.equals("semaphore")) {
            // As zklock-bench semaphore: LEASES holders, WAITERS threads
            // queue (one lease each, given back at once), the holders let
            // go, and the drain is timed.
            int n = Integer.parseInt(a[2]), leases = Integer.parseInt(a[3]);
            String path = base + "/semaphore";
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2(cf, path, leases);
            List<Lease> held = new ArrayList<>();
            for (int i = 0; i < leases; i++) held.add(sem.acquire());
            CountDownLatch done = new CountDownLatch(n);
            for (int i = 0; i < n; i++) {
                Thread th = new Thread(() -> {
                    try {
                        Lease l = sem.acquire();
                        l.close();
                        done.countDown();
                    } catch (Exception e) { e.printStackTrace(); }
                }, "w");
                th.setDaemon(true);
                th.start();
            }
            long t0q = System.nanoTime();
            // Queued: every waiter's node is in the mutex's queue (the
            // one holding it waits for a lease).
            while (cf.getChildren().forPath(path + "/locks").size() < n) Thread.sleep(20);
            double enq = (System.nanoTime() - t0q) / 1e9;
            long t0 = System.nanoTime();
            for (Lease l : held) l.close();
            done.await();
            double secs = (System.nanoTime() - t0) / 1e9;
            System.out.printf("{\"scenario\":\"semaphore\",\"peer\":\"curator\",\"waiters\":%d,"
                + "\"leases\":%d,\"grants_per_s\":%.1f,\"enqueue_s\":%.2f}%n",
                n, leases, n / secs, enq);
        } else if (sc.equals("readmostly")) {
            // As zklock-bench readmostly: READERS threads take and give
            // back the read lock in a loop, a writer every WRITE_EVERY_MS.
            int n = Integer.parseInt(a[2]);
            long every = Long.parseLong(a[3]);
            double seconds = Double.parseDouble(a[4]);
            String path = base + "/readmostly";
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(cf, path);
            AtomicLong reads = new AtomicLong(), writes = new AtomicLong();
            measuring.set(true);
            for (int i = 0; i < n; i++) {
                Thread th = new Thread(() -> {
                    InterProcessMutex r = new InterProcessReadWriteLock(cf, path).readLock();
                    try {
                        while (measuring.get()) {
                            r.acquire();
                            reads.incrementAndGet();
                            r.release();
                        }
                    } catch (Exception e) {
                        if (measuring.get()) e.printStackTrace();
                    }
                }, "r");
                th.setDaemon(true);
                th.start();
            }
            Thread wt = new Thread(() -> {
                InterProcessMutex w = rw.writeLock();
                try {
                    while (measuring.get()) {
                        long next = System.nanoTime() + every * 1000000L;
                        w.acquire();
                        writes.incrementAndGet();
                        w.release();
                        long left = next - System.nanoTime();
                        if (left > 0) Thread.sleep(left / 1000000L);
                    }
                } catch (Exception e) {
                    if (measuring.get()) e.printStackTrace();
                }
            }, "w");
            wt.setDaemon(true);
            while (reads.get() < n) Thread.sleep(10); // warm
            wt.start();
            long r0 = reads.get(), t0 = System.nanoTime();
            Thread.sleep((long) (seconds * 1000));
            long r1 = reads.get(), w1 = writes.get();
            double secs = (System.nanoTime() - t0) / 1e9;
            measuring.set(false);
            System.out.printf("{\"scenario\":\"readmostly\",\"peer\":\"curator\",\"readers\":%d,"
                + "\"write_every_ms\":%d,\"read_grants_per_s\":%.1f,\"writes_per_s\":%.2f}%n",
                n, every, (r1 - r0) / secs, w1 / secs);
        } else if (sc.equals("multilock")) {
            // As zklock-bench multilock: one InterProcessMultiLock over
            // LOCKS InterProcessMutex on distinct free paths, acquired
            // (timed) and released (not timed) ROUNDS times, one thread.
            int n = Integer.parseInt(a[2]), rounds = Integer.parseInt(a[3]);
            List<InterProcessLock> locks = new ArrayList<>();
            List<String> paths = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                paths.add(base + "/multi-" + i);
                locks.add(new InterProcessMutex(cf, paths.get(i)));
            }
            InterProcessMultiLock m = new InterProcessMultiLock(locks);
            m.acquire(); m.release(); // the paths exist, as in service
            long[] lat = new long[rounds];
            for (int i = 0; i < rounds; i++) {
                long s = System.nanoTime();
                m.acquire();
                lat[i] = System.nanoTime() - s;
                m.release();
            }
            int left = 0;
            for (String p : paths) {
                try {
                    left += cf.getChildren().forPath(p).size();
                } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
                    // a container the server removed: nothing left there
                }
            }
            System.out.printf("{\"scenario\":\"multilock\",\"peer\":\"curator\",\"locks\":%d,"
                + "\"rounds\":%d,\"acquire_p50_us\":%.1f,\"acquire_p99_us\":%.1f,"
                + "\"nodes_left\":%d}%n",
                n, rounds, pct(lat, rounds, 50), pct(lat, rounds, 99), left);
        }
        cf.close();
        System.exit(0);
    }

    static final java.util.concurrent.atomic.AtomicBoolean volatile_flag = new java.util.concurrent.atomic.AtomicBoolean();
    static final java.util.concurrent.atomic.AtomicBoolean measuring = new java.util.concurrent.atomic.AtomicBoolean();
}
