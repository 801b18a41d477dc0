# A fleet of Debian nginx instances with ngx_http_zklock_module, in front
# of the counting origin (test/nginx-origin.c), against a ZooKeeper server
# of their own: what test/test-nginx.sh and bench/nginx share. Sourced,
# with $tmp, $top_srcdir and $top_builddir set; provides:
#
#   fleet_check            why the fleet cannot run here ("" when it can)
#   fleet_zk               starts ZooKeeper ($tmp/zk): $zkh
#   fleet_origin           starts the origin: $O (host:port)
#   fleet_start N [WORKERS] [EXTRA-HTTP-LINES]
#                          instances 1..N: $T (their host:ports, comma
#                          separated), ${ports[k]}
#   fleet_stop             everything, killed
#   ngx ARGS...            nginx, with a sanitizer build's runtime
#   stats, stat_field F, reset_origin   the origin's counts
#   jfield JSON F          a field of a JSON line
#   all_connected          every worker of every instance connected
#   free_port              a port nothing listens on
#
# Each instance's locations (KEY: the rest of the path after the prefix):
#   /w/KEY   zklock KEY             /r/KEY   zklock KEY shared
#   /u/KEY   no lock (the control)  /c/...   zklock_cache_lock on a cache
#   /nc/...  the cache, no lock     /open/, /closed/   fail_open / closed
#   /ct/...  zklock_cache_lock, timeout=1s on_timeout=503
#   /lr/...  limit_req's delay (nginx's own waiting, for the benchmark)
#   /status  zklock_status
# ZKL_FLEET_N3_HTTP: http-level lines for instance 3 alone.
module=$top_builddir/nginx-module/ngx_http_zklock_module.so
origin_bin=$top_builddir/test/zkl-nginx-origin
NGINX=${ZKL_TEST_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
zk=$top_srcdir/test/zkserver.sh
export LD_LIBRARY_PATH=$top_builddir/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

fleet_check() {
    [ -f "$module" ] || { echo "no $module (configure found no nginx-dev)"; return; }
    [ -x "$NGINX" ] || { echo "no nginx binary (apt-get install nginx)"; return; }
    [ -x "$origin_bin" ] || { echo "no $origin_bin (libevent_extra)"; return; }
    command -v curl >/dev/null || { echo "no curl"; return; }
}

# A sanitizer build's module (and libzklock) in Debian's nginx, which is
# not: its runtime goes first, preloaded into nginx alone. Reports go to
# $tmp/asan.PID; nginx's own memory at exit is not ours to judge (no leak
# check).
ngx_env=()
asan_rt=$(ldd "$module" 2>/dev/null | awk '/libasan/ {print $3}')
if [ -n "$asan_rt" ]; then
    ngx_env=(LD_PRELOAD="$asan_rt"
             ASAN_OPTIONS="detect_leaks=0:log_path=$tmp/asan:abort_on_error=1"
             UBSAN_OPTIONS="print_stacktrace=1:log_path=$tmp/asan")
fi
ngx() { env "${ngx_env[@]+"${ngx_env[@]}"}" "$NGINX" "$@"; }

free_port() {
    local p
    for _ in $(seq 200); do
        p=$((10000 + RANDOM % 22000))
        ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && { echo "$p"; return 0; }
    done
    return 1
}

fleet_zk() { zkh=$("$zk" start "$tmp/zk"); }

fleet_origin() {
    local port
    port=$(free_port) || return 1
    "$origin_bin" "$port" >"$tmp/origin.log" 2>&1 &
    origin_pid=$!
    O=127.0.0.1:$port
    for _ in $(seq 50); do grep -q ready "$tmp/origin.log" && return 0; sleep 0.1; done
    echo "the origin did not start"; cat "$tmp/origin.log"; return 1
}

# fleet_conf N PORT WORKERS EXTRA: instance N's nginx.conf.
fleet_conf() {
    local n=$1 port=$2 d=$tmp/n$1
    mkdir -p "$d/logs" "$d/tmp" "$d/cache"
    cat >"$d/nginx.conf" <<EOF
load_module $module;
worker_processes $3;
error_log $d/logs/error.log info;
pid $d/nginx.pid;
user root;
events { worker_connections 8192; }
http {
    log_format zk '\$request_uri \$status \$zklock_status \$zklock_wait_ms \$zklock_token';
    access_log ${ZKL_NGINX_ACCESS_LOG:-$d/logs/access.log zk};
    zklock_servers $zkh;
    zklock_session_timeout 4s;
    $([ "$n" = 3 ] && echo "${ZKL_FLEET_N3_HTTP:-}")
    client_body_temp_path $d/tmp; proxy_temp_path $d/tmp;
    fastcgi_temp_path $d/tmp; uwsgi_temp_path $d/tmp; scgi_temp_path $d/tmp;
    proxy_cache_path $d/cache keys_zone=c$n:1m;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    # (a key that is never empty: requests with an empty one pass)
    limit_req_zone \$server_port zone=lr$n:1m rate=1r/m;
    upstream origin { server $O; keepalive 256; }
    $4
    server {
        listen 127.0.0.1:$port backlog=4096;
        add_header X-Zklock-Status \$zklock_status always;
        add_header X-Zklock-Wait \$zklock_wait_ms always;
        location ~ ^/w(?<k>/.*)\$ {
            zklock \$k timeout=60s;
            proxy_set_header X-Lock-Key \$k;
            proxy_set_header X-Fencing-Token \$zklock_token;
            proxy_pass http://origin;
        }
        location ~ ^/r(?<k>/.*)\$ {
            zklock \$k shared timeout=60s;
            proxy_set_header X-Lock-Key \$k;
            proxy_set_header X-Lock-Mode read;
            proxy_pass http://origin;
        }
        location /c/ {
            proxy_cache c$n;
            # (\$host, not \$proxy_host: the proxy's variables are
            # empty when the lock is taken, before the proxy runs)
            proxy_cache_key \$scheme\$host\$request_uri;
            zklock_cache_lock \$scheme\$host\$request_uri timeout=60s;
            proxy_set_header X-Lock-Key \$uri;
            proxy_set_header X-Instance n$n;
            proxy_cache_bypass \$http_x_nocache;
            proxy_pass http://origin;
        }
        # A key that changes each time it is evaluated.
        location /vk/ {
            zklock \$uri\$msec timeout=5s;
            proxy_set_header X-Lock-Key \$uri;
            proxy_pass http://origin;
        }
        location /ct/ {
            proxy_cache c$n;
            proxy_cache_key \$scheme\$host\$request_uri;
            zklock_cache_lock \$scheme\$host\$request_uri timeout=1s on_timeout=503;
            proxy_set_header X-Lock-Key \$uri;
            proxy_pass http://origin;
        }
        location /ep/ {
            zklock \$uri timeout=1s;
            error_page 503 = @retry;
            proxy_set_header X-Lock-Key \$uri;
            proxy_pass http://origin;
        }
        # SSI: the page's lock covers its include's fetch.
        location /s/ {
            zklock \$uri timeout=20s;
            ssi on;
            root $tmp/www;
        }
        location /sub/ {
            proxy_set_header X-Lock-Key /s/x;
            proxy_pass http://origin;
        }
        location /pt/ {
            zklock \$uri timeout=1s on_timeout=pass;
            proxy_set_header X-Lock-Key \$uri;
            proxy_pass http://origin;
        }
        location @retry {
            zklock \$uri timeout=20s;
            proxy_set_header X-Lock-Key \$uri;
            proxy_pass http://origin;
        }
        # The controls: the same without the locks.
        location ~ ^/u(?<k>/.*)\$ {
            proxy_set_header X-Lock-Key \$k;
            proxy_pass http://origin;
        }
        location /nc/ {
            proxy_cache c$n;
            proxy_cache_key \$scheme\$host\$request_uri;
            proxy_set_header X-Lock-Key \$uri;
            proxy_set_header X-Instance n$n;
            proxy_pass http://origin;
        }
        location /lr/ {
            limit_req zone=lr$n burst=100000;
            proxy_pass http://origin;
        }
        location /open/ {
            zklock \$uri timeout=3s;
            zklock_unavailable fail_open;
            proxy_pass http://origin;
        }
        location /closed/ {
            zklock \$uri timeout=3s;
            proxy_pass http://origin;
        }
        location = /status { zklock_status; }
    }
}
EOF
}

fleet_workers=2
fleet_n=0
ports=()
fleet_start() { # N [WORKERS] [EXTRA-HTTP-LINES]
    local n
    fleet_n=$1
    fleet_workers=${2:-2}
    T=
    for n in $(seq "$fleet_n"); do
        ports[n]=$(free_port) || return 1
        fleet_conf "$n" "${ports[n]}" "$fleet_workers" "${3:-}"
        ngx -p "$tmp/n$n" -c "$tmp/n$n/nginx.conf" || {
            echo "nginx $n would not start"; tail -5 "$tmp/n$n/logs/error.log"; return 1; }
        T=${T:+$T,}127.0.0.1:${ports[n]}
    done
}

fleet_stop() {
    local d m kids
    for d in "$tmp"/n*; do
        [ -s "$d/nginx.pid" ] || continue
        # The master first: killed after its children, it could start
        # another (a cache manager) that would outlive the run.
        m=$(cat "$d/nginx.pid")
        kids=$(pgrep -P "$m")
        kill -9 "$m" 2>/dev/null
        # shellcheck disable=SC2086
        [ -n "$kids" ] && kill -9 $kids 2>/dev/null
    done
    [ -n "${origin_pid:-}" ] && kill "$origin_pid" 2>/dev/null
    "$zk" kill "$tmp/zk" >/dev/null 2>&1 || true
}

stats() { curl -s -m 10 "http://$O/__stats"; }
stat_field() { stats | python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
reset_origin() { curl -s -m 10 "http://$O/__reset" >/dev/null; }
jfield() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# Every worker of every instance connected: a request to /status lands
# on any worker of an instance, so ask until each pid said so.
all_connected() {
    local n out pids
    for n in $(seq "$fleet_n"); do
        pids=""
        for _ in $(seq 200); do
            out=$(curl -s -m 2 "http://127.0.0.1:${ports[n]}/status")
            case $out in *CONNECTED*) pids="$pids $(jfield "$out" pid)" ;; esac
            [ "$(echo "$pids" | tr ' ' '\n' | sort -u | grep -c .)" -ge "$fleet_workers" ] && break
            sleep 0.05
        done
        [ "$(echo "$pids" | tr ' ' '\n' | sort -u | grep -c .)" -ge "$fleet_workers" ] || {
            echo "instance $n: not every worker connected ($pids)"; return 1; }
    done
}
