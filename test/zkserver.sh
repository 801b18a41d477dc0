#!/usr/bin/env bash
# Starts and stops a throw-away ZooKeeper (Debian's `zookeeper` package) on
# 127.0.0.1, on a free port, with all state in one directory.
#
#   zkserver.sh start DIR      start (port chosen once, kept in DIR/port);
#                              prints 127.0.0.1:PORT when it serves
#   zkserver.sh stop DIR       SIGTERM, SIGKILL after 5 s; waits until gone
#   zkserver.sh kill DIR       SIGKILL; waits until gone
#   zkserver.sh restart DIR    stop, then start on the same port and data
#   zkserver.sh hosts DIR      prints 127.0.0.1:PORT
#
# tickTime=500 lets tests use 1..10 s sessions for fast expiry.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|kill|restart|hosts DIR" >&2; exit 2; }

CP=/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar:/usr/share/java/netty-handler.jar:/usr/share/java/netty-transport.jar:/usr/share/java/netty-common.jar:/usr/share/java/netty-buffer.jar:/usr/share/java/netty-resolver.jar:/usr/share/java/netty-codec.jar:/usr/share/java/commons-io.jar:/usr/share/java/metrics-core.jar:/usr/share/java/jline.jar

port_free() {
    ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

alive() {
    local pid=$1 st
    [ -e "/proc/$pid" ] || return 1
    # PID 1 may reap late: a zombie counts as stopped.
    st=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z)
    [ "$st" != Z ]
}

srvr() {
    local port=$1 out
    out=$( (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf srvr >&3 && timeout 2 cat <&3) 2>/dev/null || true)
    case "$out" in *Mode:*) return 0 ;; esac
    return 1
}

start() {
    mkdir -p "$dir/data"
    local port
    if [ -s "$dir/port" ]; then
        port=$(cat "$dir/port")
    else
        for _ in $(seq 200); do
            port=$(( 20000 + RANDOM % 40000 ))
            port_free "$port" && break
        done
        echo "$port" > "$dir/port"
    fi
    cat > "$dir/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,stat,mntr,wchs,cons,dump
forceSync=${ZKL_FORCE_SYNC:-no}
CFG
    cat > "$dir/log4j.properties" <<'L4J'
log4j.rootLogger=WARN, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=${zk.logfile}
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
L4J
    setsid java -Xmx512m -XX:+UseSerialGC -Dzookeeper.admin.enableServer=false \
        -Dzk.logfile="$dir/server.log" \
        -Dlog4j.configuration="file:$dir/log4j.properties" \
        -cp "$CP" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
        > "$dir/stdout.log" 2>&1 < /dev/null &
    echo $! > "$dir/pid"
    for _ in $(seq 300); do
        if srvr "$port"; then
            echo "127.0.0.1:$port"
            return 0
        fi
        if ! alive "$(cat "$dir/pid")"; then
            echo "zkserver: server exited; see $dir/server.log $dir/stdout.log" >&2
            tail -5 "$dir/stdout.log" >&2 || true
            return 1
        fi
        sleep 0.1
    done
    echo "zkserver: not serving after 30 s" >&2
    return 1
}

stop() {
    local sig=${1:-TERM} pid
    [ -s "$dir/pid" ] || return 0
    pid=$(cat "$dir/pid")
    kill -"$sig" "$pid" 2>/dev/null || true
    for i in $(seq 100); do
        alive "$pid" || { rm -f "$dir/pid"; return 0; }
        [ "$i" = 50 ] && kill -KILL "$pid" 2>/dev/null || true
        sleep 0.1
    done
    echo "zkserver: pid $pid would not die" >&2
    return 1
}

case "$cmd" in
    start) start ;;
    stop) stop TERM ;;
    kill) stop KILL ;;
    restart) stop TERM && start ;;
    hosts) echo "127.0.0.1:$(cat "$dir/port")" ;;
    *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
