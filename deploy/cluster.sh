#!/usr/bin/env bash
# cluster.sh — two name servers and two master–slave broker groups as local processes.
#
#   deploy/cluster.sh start  [--mode sync|async] [--dir DIR]   build ferry if needed, start all six
#   deploy/cluster.sh status [--dir DIR]                        which are running, and the cluster
#   deploy/cluster.sh stop   [--dir DIR]                        SIGTERM all, wait for clean exits
#
# Config files: deploy/local/*.yaml (one per process; ports 9876/9877 for the name servers,
# 10911/10921 broker-a master/slave, 10931/10941 broker-b). --mode sets the masters'
# brokerRole (sync: SYNC_MASTER, the default; async: ASYNC_MASTER). Everything the
# cluster writes goes under DIR (default ./ferry-cluster): DIR/data/<name>, DIR/logs/<name>.log,
# DIR/run/<name>.pid, and DIR/bin/ferry (built from this checkout unless FERRY_BIN is set).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cmd="${1:-}"; shift || true
mode=sync
dir="$PWD/ferry-cluster"
while [ $# -gt 0 ]; do
  case "$1" in
    --mode) mode="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    *) echo "cluster.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$mode" in sync) role=SYNC_MASTER ;; async) role=ASYNC_MASTER ;; *) echo "cluster.sh: --mode is sync or async" >&2; exit 2 ;; esac
names=(namesrv-1 namesrv-2 broker-a broker-b broker-a-s broker-b-s)
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
bin="${FERRY_BIN:-$dir/bin/ferry}"

running() { [ -f "$dir/run/$1.pid" ] && kill -0 "$(cat "$dir/run/$1.pid")" 2>/dev/null; }

start_one() {
  local name=$1 kind=broker env=()
  case "$name" in namesrv-*) kind=namesrv ;; esac
  if running "$name"; then echo "$name already running (pid $(cat "$dir/run/$name.pid"))"; return; fi
  mkdir -p "$dir/data/$name" "$dir/logs" "$dir/run"
  local args=("$kind" --config "$here/local/$name.yaml")
  if [ "$kind" = broker ]; then
    args+=(--data-dir "$dir/data/$name")
    case "$name" in *-s) ;; *) env=(FERRY_BROKER_BROKER_ROLE="$role") ;; esac
  fi
  env "${env[@]}" "$bin" "${args[@]}" >>"$dir/logs/$name.log" 2>&1 &
  echo $! >"$dir/run/$name.pid"
  echo "started $name (pid $!, log $dir/logs/$name.log)"
}

case "$cmd" in
  start)
    if [ -z "${FERRY_BIN:-}" ]; then
      mkdir -p "$dir/bin"
      (cd "$root" && go build -o "$dir/bin/ferry" ./cmd/ferry)
    fi
    for n in "${names[@]}"; do start_one "$n"; done
    sleep 1
    for n in "${names[@]}"; do running "$n" || { echo "cluster.sh: $n exited; see $dir/logs/$n.log" >&2; tail -5 "$dir/logs/$n.log" >&2; exit 1; }; done
    echo "cluster up ($mode replication): name servers 127.0.0.1:9876;127.0.0.1:9877"
    ;;
  status)
    code=0
    for n in "${names[@]}"; do
      if running "$n"; then echo "$n: running (pid $(cat "$dir/run/$n.pid"))"; else echo "$n: stopped"; code=3; fi
    done
    if command -v ferryctl >/dev/null 2>&1; then ferryctl -n "127.0.0.1:9876;127.0.0.1:9877" cluster list || true; fi
    exit $code
    ;;
  stop)
    for n in broker-a-s broker-b-s broker-a broker-b namesrv-1 namesrv-2; do
      if running "$n"; then kill -TERM "$(cat "$dir/run/$n.pid")"; fi
    done
    for n in "${names[@]}"; do
      for _ in $(seq 1 150); do running "$n" || break; sleep 0.1; done
      if running "$n"; then echo "cluster.sh: $n did not stop within 15 s" >&2; exit 1; fi
      rm -f "$dir/run/$n.pid"
    done
    echo "cluster stopped"
    ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
