#!/usr/bin/env bash
# The Curator peer of test-curator.sh (test/CuratorPeer.java, unchanged)
# against a server with a TLS client port or SASL (test/zkserver.sh
# --tls / --tls-expired / --sasl), or ZooKeeper's own Java CLI the same
# way, to look at such a server from a test.
#
#   test/curator-tls.sh [OPTIONS] HOSTS PATH WAIT_MS HOLD_MS [KIND [ID]]
#       java CuratorPeer with the arguments and output of CuratorPeer.java
#       ("READY <ms>", "ACQUIRED <ms> <node>" or "TIMEOUT <ms>",
#       "RELEASED <ms>", ...); exit status that of java.
#   test/curator-tls.sh [OPTIONS] --cli HOSTS ZKCLI-COMMAND...
#       org.apache.zookeeper.ZooKeeperMain -server HOSTS COMMAND..., e.g.
#       --cli HOSTS ls /path
#   test/curator-tls.sh --classpath
#       prints the classpath (compiling CuratorPeer first)
#
# OPTIONS
#   --server DIR   take the mode, the certificates and the SASL user from
#                  a zkserver.sh directory (a node's, or an ensemble's: its
#                  n1): DIR/security, DIR/certdir, DIR/sasl.{user,password}
#   --tls          TLS client (the default when neither --tls nor --sasl
#                  nor --server is given)
#   --certs DIR    certificates made by test/tls-certs.sh (default
#                  $ZKL_ZK_CERTS): truststore DIR/ca.pem, keystore
#                  DIR/client.keystore.pem (both type PEM)
#   --keystore F   another client keystore (PEM: key + certificate), e.g.
#                  DIR/other-client.keystore.pem (untrusted by the server)
#   --truststore F another truststore (PEM), e.g. DIR/other-ca.pem
#   --sasl USER PASSWORD_FILE   SASL DIGEST-MD5 as USER (JAAS section
#                  Client, written to a temporary file)
#   --no-sasl      no SASL even if --server's directory has it
#
# The client side needs what the server side needs (deps/NOTES-tls.md
# 2d): zookeeper.jar's manifest names no netty-codec, and
# ClientCnxnSocketNetty's SslHandler is a ByteToMessageDecoder, so the
# classpath lists netty-codec and netty-resolver besides Curator's. The
# classes are compiled once into ${ZKL_CURATOR_CLASSES:-/tmp/zkl-curator-peer-<hash>}.
#
# System properties set for TLS (ZooKeeper 3.8 client):
#   zookeeper.client.secure=true
#   zookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty
#   zookeeper.ssl.keyStore.location=KEYSTORE zookeeper.ssl.keyStore.type=PEM
#   zookeeper.ssl.trustStore.location=TRUSTSTORE zookeeper.ssl.trustStore.type=PEM
# (host name verification stays on: the server certificate names
# IP:127.0.0.1 and DNS:localhost.) For SASL: java.security.auth.login.config.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
J=/usr/share/java
CP=$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar:$J/slf4j-nop.jar
CP=$CP:$J/netty-handler.jar:$J/netty-transport.jar:$J/netty-common.jar:$J/netty-buffer.jar:$J/netty-resolver.jar:$J/netty-codec.jar:$J/netty-transport-native-epoll.jar:$J/netty-transport-native-unix-common.jar
# ZooKeeperMain (--cli) needs commons-cli (also in zookeeper.jar's manifest).
CP=$CP:$J/commons-cli.jar

tls="" sasl_user="" sasl_pass="" certs=${ZKL_ZK_CERTS:-} ks="" ts="" cli="" nosasl=""
while [ $# -gt 0 ]; do
    case "$1" in
        --server)
            d=$2
            [ -s "$d/port" ] || [ ! -d "$d/n1" ] || d=$d/n1
            case " $(cat "$d/security" 2>/dev/null) " in *" tls "*|*" tls-expired "*)
                tls=1; certs=$(cat "$d/certdir") ;; esac
            case " $(cat "$d/security" 2>/dev/null) " in *" sasl "*)
                sasl_user=$(cat "$d/sasl.user"); sasl_pass=$d/sasl.password ;; esac
            [ -n "$tls$sasl_user" ] || tls=0
            shift 2 ;;
        --tls) tls=1; shift ;;
        --certs) certs=$2; shift 2 ;;
        --keystore) ks=$2; shift 2 ;;
        --truststore) ts=$2; shift 2 ;;
        --sasl) sasl_user=$2; sasl_pass=$3; shift 3 ;;
        --no-sasl) nosasl=1; shift ;;
        --cli) cli=1; shift ;;
        --classpath) cli=classpath; shift ;;
        --*) echo "curator-tls: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ -z "$nosasl" ] || sasl_user=""
[ -n "$tls$sasl_user" ] || tls=1
[ "$tls" = 0 ] && tls=""

# CuratorPeer compiled once per version of its source.
src=$here/CuratorPeer.java
classes=${ZKL_CURATOR_CLASSES:-${TMPDIR:-/tmp}/zkl-curator-peer-$(sha256sum "$src" | cut -c1-16)}
if [ ! -s "$classes/CuratorPeer.class" ]; then
    w=$(mktemp -d "${classes}.XXXXXX")
    javac -d "$w" -cp "$CP" "$src"
    # First one in wins; a loser's copy is the same.
    mv -T "$w" "$classes" 2>/dev/null || rm -rf "$w"
fi
if [ "$cli" = classpath ]; then
    echo "$classes:$CP"
    exit 0
fi

props=()
if [ -n "$tls" ]; then
    if [ -z "$certs" ] && { [ -z "$ks" ] || [ -z "$ts" ]; }; then
        echo "curator-tls: no certificates (--certs DIR, --server DIR or ZKL_ZK_CERTS)" >&2
        exit 2
    fi
    props+=(-Dzookeeper.client.secure=true
        -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty
        "-Dzookeeper.ssl.keyStore.location=${ks:-$certs/client.keystore.pem}"
        -Dzookeeper.ssl.keyStore.type=PEM
        "-Dzookeeper.ssl.trustStore.location=${ts:-$certs/ca.pem}"
        -Dzookeeper.ssl.trustStore.type=PEM)
fi
if [ -n "$sasl_user" ]; then
    jaas=$(mktemp "${TMPDIR:-/tmp}/zkl-jaas.XXXXXX")
    trap 'rm -f "$jaas"' EXIT
    printf 'Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username="%s"\n  password="%s";\n};\n' \
        "$sasl_user" "$(head -1 "$sasl_pass")" > "$jaas"
    props+=("-Djava.security.auth.login.config=$jaas")
fi

if [ -n "$cli" ]; then
    [ $# -ge 2 ] || { echo "usage: $0 [OPTIONS] --cli HOSTS COMMAND..." >&2; exit 2; }
    h=$1
    shift
    # Not exec: the JAAS file is removed on exit.
    java "${props[@]+"${props[@]}"}" -cp "$classes:$CP" org.apache.zookeeper.ZooKeeperMain -server "$h" "$@" < /dev/null
else
    [ $# -ge 4 ] || { echo "usage: $0 [OPTIONS] HOSTS PATH WAIT_MS HOLD_MS [KIND [ID]]" >&2; exit 2; }
    java "${props[@]+"${props[@]}"}" -cp "$classes:$CP" CuratorPeer "$@"
fi
