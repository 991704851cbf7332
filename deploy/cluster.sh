#!/usr/bin/env bash
# cluster.sh — a Ferry cluster as local processes on 127.0.0.1.
#
#   deploy/cluster.sh start  [--mode sync|async|controller] [--dir DIR]   build ferry if needed, start all
#   deploy/cluster.sh status [--dir DIR]                                  which are running, and the cluster
#   deploy/cluster.sh stop   [--dir DIR]                                  SIGTERM all, wait for clean exits
#
# --mode sync (the default) or async: two name servers and two master–slave broker groups;
# config files deploy/local/*.yaml (ports 9876/9877 for the name servers, 10911/10921
# broker-a master/slave, 10931/10941 broker-b); the mode sets the masters' brokerRole
# (SYNC_MASTER or ASYNC_MASTER). --mode controller: automatic failover, two name servers,
# three controllers (deploy/local/controller-mode/controller-*.yaml, ports 9878-9880, Raft
# 9881-9883) and two groups of three brokers in controller mode (broker-a-1..3 on 10911,
# 10921, 10931, broker-b-1..3 on 10941, 10951, 10961; HA on the port + 1). Everything the
# cluster writes goes under DIR (default ./ferry-cluster): DIR/data/<name>,
# DIR/logs/<name>.log, DIR/run/<name>.pid, DIR/mode, and DIR/bin/ferry (built from this
# checkout unless FERRY_BIN is set).
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
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
# status and stop act on the mode the cluster was started with.
if [ "$cmd" != start ] && [ -f "$dir/mode" ]; then mode=$(cat "$dir/mode"); fi
role=
case "$mode" in
  sync) role=SYNC_MASTER ;;
  async) role=ASYNC_MASTER ;;
  controller) ;;
  *) echo "cluster.sh: --mode is sync, async or controller" >&2; exit 2 ;;
esac
if [ "$mode" = controller ]; then
  names=(namesrv-1 namesrv-2 controller-1 controller-2 controller-3 broker-a-1 broker-a-2 broker-a-3 broker-b-1 broker-b-2 broker-b-3)
  stop_order=(broker-a-1 broker-a-2 broker-a-3 broker-b-1 broker-b-2 broker-b-3 controller-1 controller-2 controller-3 namesrv-1 namesrv-2)
else
  names=(namesrv-1 namesrv-2 broker-a broker-b broker-a-s broker-b-s)
  stop_order=(broker-a-s broker-b-s broker-a broker-b namesrv-1 namesrv-2)
fi
bin="${FERRY_BIN:-$dir/bin/ferry}"

running() { [ -f "$dir/run/$1.pid" ] && kill -0 "$(cat "$dir/run/$1.pid")" 2>/dev/null; }

start_one() {
  local name=$1 kind=broker env=() conf="$here/local/$1.yaml"
  case "$name" in namesrv-*) kind=namesrv ;; controller-*) kind=controller ;; esac
  if [ "$mode" = controller ] && [ "$kind" != namesrv ]; then conf="$here/local/controller-mode/$name.yaml"; fi
  if running "$name"; then echo "$name already running (pid $(cat "$dir/run/$name.pid"))"; return; fi
  mkdir -p "$dir/data/$name" "$dir/logs" "$dir/run"
  local args=("$kind" --config "$conf")
  if [ "$kind" = broker ]; then
    args+=(--data-dir "$dir/data/$name")
    # The masters' role in the fixed-role modes; in controller mode the controllers assign it.
    case "$name" in *-s) ;; *) [ -z "$role" ] || env=(FERRY_BROKER_BROKER_ROLE="$role") ;; esac
  fi
  if [ "$kind" = controller ]; then env=(FERRY_CONTROLLER_DATA_DIR="$dir/data/$name"); fi
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
    echo "$mode" >"$dir/mode"
    for n in "${names[@]}"; do start_one "$n"; done
    sleep 1
    for n in "${names[@]}"; do running "$n" || { echo "cluster.sh: $n exited; see $dir/logs/$n.log" >&2; tail -5 "$dir/logs/$n.log" >&2; exit 1; }; done
    if [ "$mode" = controller ]; then
      echo "cluster up (controller mode): name servers 127.0.0.1:9876;127.0.0.1:9877, controllers 127.0.0.1:9878,127.0.0.1:9879,127.0.0.1:9880"
    else
      echo "cluster up ($mode replication): name servers 127.0.0.1:9876;127.0.0.1:9877"
    fi
    ;;
  status)
    code=0
    for n in "${names[@]}"; do
      if running "$n"; then echo "$n: running (pid $(cat "$dir/run/$n.pid"))"; else echo "$n: stopped"; code=3; fi
    done
    if command -v ferryctl >/dev/null 2>&1; then
      ferryctl -n "127.0.0.1:9876;127.0.0.1:9877" cluster list || true
      if [ "$mode" = controller ]; then ferryctl controller status --controller 127.0.0.1:9878,127.0.0.1:9879,127.0.0.1:9880 || true; fi
    fi
    exit $code
    ;;
  stop)
    for n in "${stop_order[@]}"; do
      if running "$n"; then kill -TERM "$(cat "$dir/run/$n.pid")"; fi
    done
    for n in "${names[@]}"; do
      for _ in $(seq 1 150); do running "$n" || break; sleep 0.1; done
      if running "$n"; then echo "cluster.sh: $n did not stop within 15 s" >&2; exit 1; fi
      rm -f "$dir/run/$n.pid"
    done
    echo "cluster stopped"
    ;;
  *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
