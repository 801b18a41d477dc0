#!/usr/bin/env bash
# Starts and stops throw-away ZooKeeper servers (Debian's `zookeeper`
# package) on 127.0.0.1, on free ports, with all state in one directory.
#
#   zkserver.sh start DIR      start (port chosen once, kept in DIR/port);
#                              prints 127.0.0.1:PORT when it serves
#   zkserver.sh stop DIR       SIGTERM, SIGKILL after 5 s; waits until gone
#   zkserver.sh kill DIR       SIGKILL; waits until gone
#   zkserver.sh restart DIR    stop, then start on the same port and data
#   zkserver.sh hosts DIR      prints 127.0.0.1:PORT
#
#   zkserver.sh ensemble DIR [N]   an N-node (default 3) ensemble in
#                              DIR/n1..DIR/nN; prints the connect string
#                              once every node serves. Each DIR/nK is a
#                              node directory for the commands above, and
#                              stop, kill and hosts on DIR act on them all.
#   zkserver.sh mode DIR       leader, follower, standalone, or down
#
# ZKL_ZK_NETNS=RUNID (start, ensemble): each node runs in namespace
# zkl<RUNID>sN of the namespaced cluster (test/netns.sh) on its address
# there, 10.77.1.N:2181, which is what it prints; DIR/nK/netns and
# DIR/nK/addr keep that for the other commands, which need no variable.
#
# ZKL_ZK_CFG (start, ensemble): lines added to each node's zoo.cfg after
# the defaults (a later key wins), e.g. "maxClientCnxns=3"; kept in
# DIR/extra.cfg, so a restart keeps them.
#
# tickTime=500 lets tests use 1 s sessions for fast expiry; the maximum is
# raised to 30 s for the tests that must outlive a server restart.
#
# Security modes (options anywhere among the arguments of start, restart
# and ensemble; a node keeps its mode in DIR/security, so a later start or
# restart without an option starts it the same way; no option on a new
# DIR is the plain server above, unchanged):
#   --tls          the client port is TLS only: secureClientPort (no
#                  clientPort), NettyServerCnxnFactory, PEM keystore
#                  CERTS/server.keystore.pem, truststore CERTS/ca.pem
#                  (client certificates required). Prints 127.0.0.1:PORT
#                  as ever, PORT being the TLS port. Quorum traffic of an
#                  ensemble stays plain. srvr/mode are asked over TLS
#                  (openssl s_client with CERTS/client.*).
#   --tls-expired  the same with CERTS/expired.keystore.pem, a server
#                  certificate that expired in 2021
#   --sasl         plain client port, SASL DIGEST-MD5 required
#                  (SASLAuthenticationProvider, sessionRequireClientSASLAuth);
#                  JAAS file DIR/jaas.conf with one user, ZKL_ZK_SASL_USER
#                  (default zkl) with password ZKL_ZK_SASL_PASSWORD (default
#                  zkl-secret), written to DIR/sasl.user and
#                  DIR/sasl.password (no newline: a password file for
#                  zoo_sasl_make_basic_callbacks); for an ensemble also in
#                  DIR itself. May be combined with --tls (the C client
#                  cannot use both: ZOOKEEPER-3482).
#   --plain        back to a plain server (forgets a stored mode)
#   --certs CERTS  where the certificates are (default $ZKL_ZK_CERTS, else
#                  DIR/certs, for an ensemble DIR/certs shared by its
#                  nodes); made by test/tls-certs.sh when missing. Kept in
#                  DIR/certdir.
#   zkserver.sh certs DIR      prints the certificate directory of DIR
#                              (of its node n1 for an ensemble)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
opt_sec=""      # "" (keep what DIR has), or plain, tls, tls-expired, sasl, ...
opt_certs=${ZKL_ZK_CERTS:-}
args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --tls) opt_sec="${opt_sec/plain/} tls" ;;
        --tls-expired) opt_sec="${opt_sec/plain/} tls-expired" ;;
        --sasl) opt_sec="${opt_sec/plain/} sasl" ;;
        --plain) opt_sec=plain ;;
        --certs) [ $# -ge 2 ] || { echo "zkserver: --certs needs a directory" >&2; exit 2; }
                 opt_certs=$2; shift ;;
        --*) echo "zkserver: unknown option $1" >&2; exit 2 ;;
        *) args+=("$1") ;;
    esac
    shift
done
set -- "${args[@]+"${args[@]}"}"
opt_sec=${opt_sec# }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 [--tls|--tls-expired|--sasl|--plain] [--certs CERTS] start|stop|kill|restart|hosts|mode|certs DIR | ensemble DIR [N]" >&2; exit 2; }

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

addr() { # of the node in $dir
    if [ -s "$dir/addr" ]; then cat "$dir/addr"; else echo 127.0.0.1; fi
}

sec() { # the security mode of the node in $dir: words tls, tls-expired, sasl
    cat "$dir/security" 2>/dev/null || true
}

is_tls() { case " $(sec) " in *" tls "*|*" tls-expired "*) return 0 ;; esac; return 1; }
is_sasl() { case " $(sec) " in *" sasl "*) return 0 ;; esac; return 1; }

# set_security: record the mode asked for (if any) and the certificate
# directory in the node directory $dir, and make the files they need.
set_security() {
    local certs
    mkdir -p "$dir"
    case "$opt_sec" in
        "") ;;
        plain) rm -f "$dir/security" ;;
        *) echo "$opt_sec" > "$dir/security" ;;
    esac
    if is_tls; then
        if [ -n "$opt_certs" ]; then
            certs=$opt_certs
        elif [ -s "$dir/certdir" ]; then
            certs=$(cat "$dir/certdir")
        else
            certs=$dir/certs
        fi
        certs=$(bash "$here/tls-certs.sh" "$certs") || return 1
        echo "$certs" > "$dir/certdir"
    fi
    if is_sasl; then
        if [ ! -s "$dir/sasl.user" ] || [ -n "${ZKL_ZK_SASL_USER:-}" ] || [ -n "${ZKL_ZK_SASL_PASSWORD:-}" ]; then
            printf '%s' "${ZKL_ZK_SASL_USER:-zkl}" > "$dir/sasl.user"
            printf '%s' "${ZKL_ZK_SASL_PASSWORD:-zkl-secret}" > "$dir/sasl.password"
        fi
        printf 'Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_%s="%s";\n};\n' \
            "$(cat "$dir/sasl.user")" "$(cat "$dir/sasl.password")" > "$dir/jaas.conf"
    fi
}

# ask CMD: the answer of the node in $dir to a four-letter command, asked
# from inside its namespace when it has one (nothing else reaches it).
ask() {
    local to
    if is_tls; then
        ask_tls "$1"
        return 0
    fi
    to=/dev/tcp/$(addr)/$(cat "$dir/port")
    if [ -s "$dir/netns" ]; then
        ip netns exec "$(cat "$dir/netns")" bash -c \
            'exec 3<>"$1" && printf "$2" >&3 && timeout 2 cat <&3' - "$to" "$1" 2>/dev/null
    else
        (exec 3<>"$to" && printf "$1" >&3 && timeout 2 cat <&3) 2>/dev/null
    fi || true
}

# ask_tls CMD: the same over TLS, with the client certificate of the
# node's certificate directory (-quiet: the answer only, and s_client
# waits for the server to close after it).
ask_tls() {
    local c in=()
    c=$(cat "$dir/certdir")
    [ -s "$dir/netns" ] && in=(ip netns exec "$(cat "$dir/netns")")
    printf '%s' "$1" | "${in[@]}" timeout 3 openssl s_client -quiet \
        -connect "$(addr):$(cat "$dir/port")" -CAfile "$c/ca.pem" \
        -cert "$c/client.cert.pem" -key "$c/client.key.pem" 2>/dev/null || true
}

srvr() {
    case "$(ask srvr)" in *Mode:*) return 0 ;; esac
    return 1
}

# A port nothing listens on, below the kernel's range for the local ports
# of outgoing connections: a port in that range can be free to listen on
# now and be taken as some client's local port (there are many: several
# CI jobs at once) before the server binds it, which then exits with
# "Address already in use".
free_port() {
    local port lo=32768
    read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    [ "$lo" -gt 12000 ] || lo=32768
    for _ in $(seq 200); do
        port=$(( 10000 + RANDOM % (lo - 10000) ))
        port_free "$port" && { echo "$port"; return 0; }
    done
    return 1
}

srvr_mode() {
    local out
    out=$(ask srvr | sed -n 's/^Mode: //p')
    echo "${out:-down}"
}

# netns_node N: the node in $dir runs in namespace zkl<ZKL_ZK_NETNS>sN, on
# a port of its own there (its address is its alone).
netns_node() {
    echo "zkl${ZKL_ZK_NETNS}s$1" > "$dir/netns"
    echo "10.77.1.$1" > "$dir/addr"
    echo 2181 > "$dir/port"
}

# launch: start the JVM of the node in $dir without waiting for it.
launch() {
    mkdir -p "$dir/data"
    local port main=org.apache.zookeeper.server.ZooKeeperServerMain in=() jopts=() certs ks
    set_security || return 1
    # A lone server of the namespaced cluster is its node 1.
    if [ -n "${ZKL_ZK_NETNS:-}" ] && [ ! -s "$dir/netns" ] && [ ! -s "$dir/servers" ]; then
        netns_node 1
    fi
    if [ -s "$dir/port" ]; then
        port=$(cat "$dir/port")
    else
        port=$(free_port)
        echo "$port" > "$dir/port"
    fi
    cat > "$dir/zoo.cfg" <<CFG
tickTime=500
maxSessionTimeout=30000
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=$(addr)
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,stat,mntr,wchs,cons,dump
forceSync=${ZKL_FORCE_SYNC:-no}
CFG
    if is_tls; then
        # The TLS port instead of the plain one (clientPortAddress
        # without clientPort is refused).
        certs=$(cat "$dir/certdir")
        ks=$certs/server.keystore.pem
        case " $(sec) " in *" tls-expired "*) ks=$certs/expired.keystore.pem ;; esac
        sed -i -e "s/^clientPort=.*/secureClientPort=$port/" \
            -e "s/^clientPortAddress=/secureClientPortAddress=/" "$dir/zoo.cfg"
        cat >> "$dir/zoo.cfg" <<CFG
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=$ks
ssl.keyStore.type=PEM
ssl.trustStore.location=$certs/ca.pem
ssl.trustStore.type=PEM
CFG
    fi
    if is_sasl; then
        cat >> "$dir/zoo.cfg" <<CFG
authProvider.1=org.apache.zookeeper.server.auth.SASLAuthenticationProvider
sessionRequireClientSASLAuth=true
CFG
        jopts+=("-Djava.security.auth.login.config=$dir/jaas.conf")
    fi
    [ -z "${ZKL_ZK_CFG:-}" ] || printf '%s\n' "$ZKL_ZK_CFG" > "$dir/extra.cfg"
    [ ! -s "$dir/extra.cfg" ] || cat "$dir/extra.cfg" >> "$dir/zoo.cfg"
    if [ -s "$dir/servers" ]; then
        # An ensemble node: its peers, and who it is.
        cat "$dir/servers" >> "$dir/zoo.cfg"
        main=org.apache.zookeeper.server.quorum.QuorumPeerMain
    fi
    cat > "$dir/log4j.properties" <<'L4J'
log4j.rootLogger=WARN, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File=${zk.logfile}
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1} - %m%n
L4J
    # Quotas are enforced (zookeeper.enforceQuota): a path without one
    # is not affected, and the tests of a hard quota need it.
    [ -s "$dir/netns" ] && in=(ip netns exec "$(cat "$dir/netns")")
    setsid "${in[@]}" java -Xmx512m -XX:+UseSerialGC -Dzookeeper.admin.enableServer=false \
        -Dzookeeper.enforceQuota=true "${jopts[@]+"${jopts[@]}"}" \
        -Dzk.logfile="$dir/server.log" \
        -Dlog4j.configuration="file:$dir/log4j.properties" \
        -cp "$CP" "$main" "$dir/zoo.cfg" \
        > "$dir/stdout.log" 2>&1 < /dev/null &
    echo $! > "$dir/pid"
}

# ready: wait until the node in $dir serves; print its address.
ready() {
    local port
    port=$(cat "$dir/port")
    for _ in $(seq 300); do
        if srvr; then
            echo "$(addr):$port"
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

start() {
    launch && ready
}

ensemble() {
    local n=${1:-3} i lines="" hosts=""
    mkdir -p "$dir"
    # The nodes share one certificate directory, and the SASL user.
    if [ -n "$opt_sec" ] && [ "$opt_sec" != plain ]; then
        echo "$opt_sec" > "$dir/security"
        if is_tls; then
            opt_certs=$(bash "$here/tls-certs.sh" "${opt_certs:-$dir/certs}") || return 1
        fi
        if is_sasl; then
            printf '%s' "${ZKL_ZK_SASL_USER:-zkl}" > "$dir/sasl.user"
            printf '%s' "${ZKL_ZK_SASL_PASSWORD:-zkl-secret}" > "$dir/sasl.password"
        fi
    fi
    for i in $(seq "$n"); do
        mkdir -p "$dir/n$i/data"
        if [ -n "${ZKL_ZK_NETNS:-}" ]; then
            (dir=$dir/n$i; netns_node "$i")
            lines="${lines}server.$i=10.77.1.$i:2888:3888
"
        else
            free_port > "$dir/n$i/port"
            lines="${lines}server.$i=127.0.0.1:$(free_port):$(free_port)
"
        fi
    done
    for i in $(seq "$n"); do
        printf '%s' "$lines" > "$dir/n$i/servers"
        echo "$i" > "$dir/n$i/data/myid"
    done
    for i in $(seq "$n"); do
        (dir=$dir/n$i; launch)
    done
    for i in $(seq "$n"); do
        hosts="$hosts${hosts:+,}$(dir=$dir/n$i; ready)" || return 1
    done
    echo "$hosts"
}

nodes() {
    ls -d "$dir"/n[0-9]* 2>/dev/null
}

all_nodes() { # command on every node of an ensemble directory
    local f=$1 node rc=0
    for node in $(nodes); do
        (dir=$node; $f) || rc=1
    done
    return $rc
}

hosts() {
    if [ -s "$dir/port" ]; then
        echo "$(addr):$(cat "$dir/port")"
    else
        local node out=""
        for node in $(nodes); do
            out="$out${out:+,}$(dir=$node; addr):$(cat "$node/port")"
        done
        echo "$out"
    fi
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

stop_term() { stop TERM; }
stop_kill() { stop KILL; }

single() { [ -s "$dir/port" ]; }

case "$cmd" in
    start) start ;;
    stop) if single; then stop TERM; else all_nodes stop_term; fi ;;
    kill) if single; then stop KILL; else all_nodes stop_kill; fi ;;
    restart) stop TERM && start ;;
    hosts) hosts ;;
    certs) if single || [ ! -d "$dir/n1" ]; then cat "$dir/certdir"; else cat "$dir/n1/certdir"; fi ;;
    mode) srvr_mode ;;
    ensemble) shift 2; ensemble "${1:-3}" ;;
    *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
