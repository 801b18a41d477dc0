// A Curator InterProcessMutex peer for zklock's interop tests: it takes
// the same lock a zklock process takes and reports what it did, with
// wall-clock milliseconds, one line per step on stdout.
//
//   java CuratorPeer HOSTS PATH WAIT_MS HOLD_MS
//     WAIT_MS < 0 waits forever; prints "ACQUIRED <ms> <node>" or
//     "TIMEOUT <ms>", then after HOLD_MS "RELEASED <ms>".
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;

public class CuratorPeer {
    public static void main(String[] args) throws Exception {
        String hosts = args[0], path = args[1];
        long waitMs = Long.parseLong(args[2]), holdMs = Long.parseLong(args[3]);
        CuratorFramework cf = CuratorFrameworkFactory.newClient(
            hosts, 10000, 10000, new RetryNTimes(3, 200));
        cf.start();
        cf.blockUntilConnected(20, TimeUnit.SECONDS);
        InterProcessMutex m = new InterProcessMutex(cf, path);
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
        Thread.sleep(holdMs);
        long t = System.currentTimeMillis();
        m.release();
        System.out.println("RELEASED " + t);
        cf.close();
    }
}
