// A Curator peer for zklock's interop tests: it takes the same lock a
// zklock process takes and reports what it did, with wall-clock
// milliseconds, one line per step on stdout.
//
//   java CuratorPeer HOSTS PATH WAIT_MS HOLD_MS [KIND]
//     KIND: mutex (InterProcessMutex, the default), read or write (the
//     sides of InterProcessReadWriteLock), revocable (a mutex made
//     revocable: a revocation request ends the hold early).
//     WAIT_MS < 0 waits forever; prints "ACQUIRED <ms> <node>" or
//     "TIMEOUT <ms>", then "REVOKED <ms>" if asked to let go, and
//     "RELEASED <ms>" after HOLD_MS (or the revocation).
//     KIND semN: one lease of InterProcessSemaphoreV2 with N leases;
//     semcountN: the same with the limit in a SharedCount at PATH-count
//     (seeded with N).
//   java CuratorPeer HOSTS NODEPATH 0 0 revoke
//     Curator's Revoker on one lock node; prints "REVOKE-SENT <ms>".
//   java CuratorPeer HOSTS PATH WAIT_MS HOLD_MS latch ID
//     A LeaderLatch participant with id ID: prints "LEADER <ms> <id>"
//     with the id of the leader it first sees (itself or another),
//     then "ACQUIRED <ms> <node>" once it leads (or "TIMEOUT <ms>"),
//     "LOST <ms>" if it stops leading before HOLD_MS are up, and
//     "RELEASED <ms>" when it leaves (close) after HOLD_MS.
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.shared.SharedCount;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.RetryNTimes;

public class CuratorPeer {
    public static void main(String[] args) throws Exception {
        String hosts = args[0], path = args[1];
        long waitMs = Long.parseLong(args[2]), holdMs = Long.parseLong(args[3]);
        String kind = args.length > 4 ? args[4] : "mutex";
        CuratorFramework cf = CuratorFrameworkFactory.newClient(
            hosts, 10000, 10000, new RetryNTimes(3, 200));
        cf.start();
        cf.blockUntilConnected(20, TimeUnit.SECONDS);
        if (kind.equals("revoke")) {
            Revoker.attemptRevoke(cf, path);
            System.out.println("REVOKE-SENT " + System.currentTimeMillis());
            cf.close();
            return;
        }
        if (kind.startsWith("sem")) {
            lease(cf, path, waitMs, holdMs, kind);
            return;
        }
        if (kind.equals("latch")) {
            latch(cf, path, waitMs, holdMs, args[5]);
            return;
        }
        InterProcessMutex m;
        final CountDownLatch revoked = new CountDownLatch(1);
        if (kind.equals("read")) {
            m = new InterProcessReadWriteLock(cf, path).readLock();
        } else if (kind.equals("write")) {
            m = new InterProcessReadWriteLock(cf, path).writeLock();
        } else {
            m = new InterProcessMutex(cf, path);
            if (kind.equals("revocable"))
                m.makeRevocable(lock -> revoked.countDown());
        }
        System.out.println("READY " + System.currentTimeMillis());
        boolean got;
        if (waitMs < 0) {
            m.acquire();
            got = true;
        } else {
            got = m.acquire(waitMs, TimeUnit.MILLISECONDS);
        }
        if (!got) {
            System.out.println("TIMEOUT " + System.currentTimeMillis());
            cf.close();
            return;
        }
        String node = m.getParticipantNodes().iterator().next();
        System.out.println("ACQUIRED " + System.currentTimeMillis() + " " + node);
        if (revoked.await(holdMs, TimeUnit.MILLISECONDS))
            System.out.println("REVOKED " + System.currentTimeMillis());
        long t = System.currentTimeMillis();
        m.release();
        System.out.println("RELEASED " + t);
        cf.close();
    }

    static void lease(CuratorFramework cf, String path, long waitMs,
                      long holdMs, String kind) throws Exception {
        InterProcessSemaphoreV2 sem;
        SharedCount count = null;
        if (kind.startsWith("semcount")) {
            int n = Integer.parseInt(kind.substring(8));
            count = new SharedCount(cf, path + "-count", n);
            count.start();
            sem = new InterProcessSemaphoreV2(cf, path, count);
        } else {
            sem = new InterProcessSemaphoreV2(cf, path,
                                              Integer.parseInt(kind.substring(3)));
        }
        System.out.println("READY " + System.currentTimeMillis());
        Lease l = waitMs < 0 ? sem.acquire()
                             : sem.acquire(waitMs, TimeUnit.MILLISECONDS);
        if (l == null) {
            System.out.println("TIMEOUT " + System.currentTimeMillis());
        } else {
            System.out.println("ACQUIRED " + System.currentTimeMillis() + " "
                               + l.getNodeName());
            Thread.sleep(holdMs);
            long t = System.currentTimeMillis();
            System.out.println("RELEASED " + t);
            l.close();
        }
        if (count != null)
            count.close();
        cf.close();
    }

    static void latch(CuratorFramework cf, String path, long waitMs,
                      long holdMs, String id) throws Exception {
        LeaderLatch l = new LeaderLatch(cf, path, id);
        l.start();
        System.out.println("READY " + System.currentTimeMillis());
        // The leader as Curator reads it from the first node's data.
        for (int i = 0; i < 200; i++) {
            Participant p = l.getLeader();
            if (p.isLeader()) {
                System.out.println("LEADER " + System.currentTimeMillis()
                                   + " " + p.getId());
                break;
            }
            Thread.sleep(50);
        }
        boolean got;
        if (waitMs < 0) {
            l.await();
            got = true;
        } else {
            got = l.await(waitMs, TimeUnit.MILLISECONDS);
        }
        if (!got) {
            System.out.println("TIMEOUT " + System.currentTimeMillis());
        } else {
            System.out.println("ACQUIRED " + System.currentTimeMillis() + " "
                               + l.getOurPath());
            long end = System.currentTimeMillis() + holdMs;
            while (System.currentTimeMillis() < end) {
                if (!l.hasLeadership()) {
                    System.out.println("LOST " + System.currentTimeMillis());
                    break;
                }
                Thread.sleep(20);
            }
        }
        long t = System.currentTimeMillis();
        l.close();
        if (got)
            System.out.println("RELEASED " + t);
        cf.close();
    }
}
