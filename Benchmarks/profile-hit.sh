#!/usr/bin/env bash
# Profile of a cache hit: instructions (valgrind callgrind) and syscalls
# (strace -c) per response, for a whole 16 KiB resource and a 64 KiB range;
# and, for comparison, the instructions of nginx serving the same files
# directly (the origin here, also run under callgrind). The callgrind part
# also counts cold misses: a 64 KiB range of a URL not asked for before
# (the proxy's instructions only, the origin's are not counted).
#   Benchmarks/profile-hit.sh [--requests N] [--out DIR] [--proxy PATH]
# Needs nginx (the origin), valgrind, strace and curl; a release httpcache
# (swift build -c release --product httpcache). Instruction counts do not
# depend on how busy the machine is, so this runs fine next to other work.
# Each batch is N requests on one keep-alive curl connection; counters are
# zeroed before a batch and dumped after it, so start-up and the origin
# fetch are not counted.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REQUESTS=500
OUT=""
PROXY=.build/release/httpcache
while [[ $# -gt 0 ]]; do
  case "$1" in
    --requests) REQUESTS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --proxy) PROXY=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 64 ;;
  esac
done
for tool in nginx valgrind callgrind_control callgrind_annotate strace curl; do
  command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || { echo "missing $tool" >&2; exit 69; }
done
[[ -x $PROXY ]] || { echo "no httpcache at $PROXY (swift build -c release --product httpcache)" >&2; exit 69; }
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

WORK=$(mktemp -d /tmp/profile-hit.XXXXXX)
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT" "$WORK/www" "$WORK/nginx"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK/www" "$WORK/cache" "$WORK/cache-strace" "$WORK/nginx"
}
trap cleanup EXIT

head -c $((16 << 10)) /dev/urandom >"$WORK/www/small.mp4"
head -c $((16 << 20)) /dev/urandom >"$WORK/www/big.mp4"

# The origin: nginx on a free port, under callgrind (instrumentation off until
# its own batches), so it doubles as the "nginx-direct" of the comparison.
for _ in 1 2 3 4 5; do
  ORIGIN_PORT=$((20000 + RANDOM % 40000))
  cat >"$WORK/nginx/nginx.conf" <<EOF
daemon off; master_process off; worker_processes 1; pid $WORK/nginx/nginx.pid;
error_log $WORK/nginx/error.log warn;
events { worker_connections 256; }
http { access_log off; sendfile on; default_type video/mp4;
  client_body_temp_path $WORK/nginx/tmp; proxy_temp_path $WORK/nginx/tmp; fastcgi_temp_path $WORK/nginx/tmp;
  uwsgi_temp_path $WORK/nginx/tmp; scgi_temp_path $WORK/nginx/tmp;
  server { listen 127.0.0.1:$ORIGIN_PORT; root $WORK/www; } }
EOF
  valgrind --tool=callgrind --instr-atstart=no --dump-instr=no --callgrind-out-file="$OUT/callgrind-nginx.%p" \
    "$NGINX" -p "$WORK/nginx/" -c "$WORK/nginx/nginx.conf" -e "$WORK/nginx/error.log" 2>"$WORK/nginx/valgrind.err" &
  NGINX_PID=$!
  for _ in $(seq 1 100); do
    if curl -sf -o /dev/null "http://127.0.0.1:$ORIGIN_PORT/small.mp4" || ! kill -0 "$NGINX_PID" 2>/dev/null; then break; fi
    sleep 0.2
  done
  if curl -sf -o /dev/null "http://127.0.0.1:$ORIGIN_PORT/small.mp4"; then break; fi
  kill "$NGINX_PID" 2>/dev/null || true
  wait "$NGINX_PID" 2>/dev/null || true
  NGINX_PID=""
done
[[ -n ${NGINX_PID:-} ]] || { echo "nginx did not start" >&2; exit 1; }
PIDS+=("$NGINX_PID")

# Starts the proxy (optionally under a wrapper command) and sets PROXY_PID and PROXY_PORT.
start_proxy() {
  local cache=$1; shift
  "$@" "$PROXY" serve --port 0 --loops 1 --cache-dir "$cache" --log-level warning >"$cache.out" 2>"$cache.err" &
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  for _ in $(seq 1 600); do
    if grep -q '^listening on' "$cache.out" 2>/dev/null || ! kill -0 "$PROXY_PID" 2>/dev/null; then break; fi
    sleep 0.1
  done
  PROXY_PORT=$(sed -n 's/^listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$cache.out")
  [[ -n $PROXY_PORT ]] || { echo "the proxy did not start: $(cat "$cache.err")" >&2; exit 1; }
}

proxy_url() { "$PROXY" url "http://127.0.0.1:$ORIGIN_PORT/$1" --port "$PROXY_PORT"; }

# A curl config: N requests on one connection, whole small.mp4 or 64 KiB
# ranges of big.mp4, through the proxy or (with "direct") from nginx.
batch_config() {
  local kind=$1 file=$2 small big
  if [[ ${3:-} == direct ]]; then
    small=http://127.0.0.1:$ORIGIN_PORT/small.mp4
    big=http://127.0.0.1:$ORIGIN_PORT/big.mp4
  else
    small=$(proxy_url small.mp4)
    big=$(proxy_url big.mp4)
  fi
  : >"$file"
  for i in $(seq 1 "$REQUESTS"); do
    if [[ $kind == cold ]]; then
      # A URL not asked for before (the query makes it a new resource; nginx ignores it).
      printf 'url = "%s"\noutput = "/dev/null"\nrange = "0-65535"\nwrite-out = "%%{http_code} %%{num_connects}\\n"\n' \
        "$("$PROXY" url "http://127.0.0.1:$ORIGIN_PORT/big.mp4?cold=$i" --port "$PROXY_PORT")" >>"$file"
    elif [[ $kind == small ]]; then
      printf 'url = "%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code} %%{num_connects}\\n"\n' "$small" >>"$file"
    else
      local first=$(( (RANDOM * 32768 + RANDOM) % ((16 << 20) - (64 << 10)) ))
      printf 'url = "%s"\noutput = "/dev/null"\nrange = "%d-%d"\nwrite-out = "%%{http_code} %%{num_connects}\\n"\n' "$big" "$first" $((first + (64 << 10) - 1)) >>"$file"
    fi
    if [[ $i -lt $REQUESTS ]]; then echo next >>"$file"; fi
  done
}

warm() {
  curl -sf -o /dev/null "$(proxy_url small.mp4)"
  curl -sf -o /dev/null "$(proxy_url big.mp4)"
}

run_batch() {
  local codes
  # One line per response: status and new connections (1 for the first only).
  codes=$(curl -s -K "$1" | sort | uniq -c | tr -s ' ' | tr '\n' ';')
  echo "  count, status, connections opened: $codes" >&2
}

# -------------------------------------------------------------- callgrind
echo "==> callgrind: $REQUESTS hits per batch" >&2
# valgrind 3.19 cannot read the DWARF 5 of Swift 6 binaries: profile a copy
# without debug information (functions are still named from the symbol table).
PROXY_ORIGINAL=$PROXY
PROXY=$WORK/httpcache-nodebug
cp "$PROXY_ORIGINAL" "$PROXY"
strip --strip-debug "$PROXY"
start_proxy "$WORK/cache" valgrind --tool=callgrind --instr-atstart=no --dump-instr=no \
  --callgrind-out-file="$OUT/callgrind.%p"
warm
batch_config small "$WORK/small.cfg"
batch_config range "$WORK/range.cfg"
batch_config cold "$WORK/cold.cfg"
batch_config small "$WORK/nginx-small.cfg" direct
batch_config range "$WORK/nginx-range.cfg" direct
# callgrind_control acts when the process runs: a request wakes it from epoll_wait.
control() {
  local pid=$1 wake=$2; shift 2
  callgrind_control "$@" "$pid" >/dev/null 2>&1 &
  local control_pid=$!
  sleep 0.3
  curl -s -o /dev/null "$wake" || true
  wait "$control_pid"
}
# Zeroes the counters of `pid`, runs the batches and dumps them as "<prefix><kind>".
profile_batches() {
  local pid=$1 wake=$2 prefix=$3
  control "$pid" "$wake" -i on
  local kinds="small range"
  [[ -z $prefix ]] && kinds="small range cold"  # cold misses: the proxy only
  for kind in $kinds; do
    control "$pid" "$wake" -z
    run_batch "$WORK/$prefix$kind.cfg"
    control "$pid" "$wake" --dump="$prefix$kind"
  done
  control "$pid" "$wake" -i off
}
profile_batches "$PROXY_PID" "http://127.0.0.1:$PROXY_PORT/ping" ""
profile_batches "$NGINX_PID" "http://127.0.0.1:$ORIGIN_PORT/small.mp4" nginx-
kill "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null || true
PROXY=$PROXY_ORIGINAL

for name in small range cold nginx-small nginx-range; do
  file=$(grep -l "^desc: Trigger: dump $name\$" "$OUT"/callgrind*)
  total=$(awk '/^summary:/ { print $2; exit }' "$file")
  echo "$name: $((total / REQUESTS)) instructions per response (user space; $total for $REQUESTS)"
  callgrind_annotate --inclusive=no "$file" 2>/dev/null | sed -n '1,60p' >"$OUT/$name.top.txt"
  callgrind_annotate --inclusive=yes "$file" 2>/dev/null | sed -n '1,80p' >"$OUT/$name.inclusive.txt"
done

# ----------------------------------------------------------------- strace
echo "==> strace -c: $REQUESTS hits per batch" >&2
start_proxy "$WORK/cache-strace"
warm
batch_config small "$WORK/small.cfg"
batch_config range "$WORK/range.cfg"
batch_config cold "$WORK/cold.cfg"
for kind in small range; do
  strace -c -f -p "$PROXY_PID" -o "$OUT/strace.$kind.txt" &
  STRACE_PID=$!
  sleep 1
  run_batch "$WORK/$kind.cfg"
  sleep 0.3
  kill -INT "$STRACE_PID"
  wait "$STRACE_PID" 2>/dev/null || true
  echo "$kind: syscalls per response (strace -c, $REQUESTS responses on one connection):"
  awk -v n="$REQUESTS" '$1 ~ /^[0-9.]+$/ && NF >= 5 { calls = $4; name = $NF; if (calls + 0 >= n / 10) printf "  %-16s %6.2f\n", name, calls / n }' \
    "$OUT/strace.$kind.txt"
done
echo "results in $OUT" >&2
