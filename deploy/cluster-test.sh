#!/usr/bin/env bash
# The local deployment's test (`make cluster-test`): cluster.sh starts the 2m-2s cluster
# from a clean directory (sync, then async replication), Ferry's client (ferryctl) and the
# official RocketMQ Go client (examples/quickstart) send and consume through it, and it
# stops cleanly. Uses ports 9876, 9877 and 10911-10942 on 127.0.0.1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
work="$(mktemp -d)"
trap '"$here/cluster.sh" stop --dir "$work" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
(cd "$root" && go build -o "$work/ferryctl" ./cmd/ferryctl)
ctl() { "$work/ferryctl" -n "127.0.0.1:9876;127.0.0.1:9877" "$@"; }
for mode in sync async; do
  dir="$work/$mode"
  "$here/cluster.sh" start --mode "$mode" --dir "$dir"
  for _ in $(seq 1 100); do
    [ "$(ctl cluster list -o json 2>/dev/null | grep -c brokerId)" = 4 ] && break
    sleep 0.2
  done
  [ "$(ctl cluster list -o json | grep -c brokerId)" = 4 ] || { echo "cluster-test: brokers did not register" >&2; exit 1; }
  ctl send -t "Cluster$mode" --count 100 "hello $mode" >/dev/null
  got=$(ctl consume -t "Cluster$mode" -g "check-$mode" --from first --count 100 --timeout 30s -o json | wc -l)
  [ "$got" -eq 100 ] || { echo "cluster-test: ferryctl consumed $got of 100 ($mode)" >&2; exit 1; }
  (cd "$root/examples" && go run ./quickstart -namesrv 127.0.0.1:9876 -topic "Quick$mode") | tail -1 | grep -q done \
    || { echo "cluster-test: the official client's quickstart failed ($mode)" >&2; exit 1; }
  "$here/cluster.sh" status --dir "$dir" >/dev/null
  "$here/cluster.sh" stop --dir "$dir"
done
echo "cluster-test: OK (sync and async: ferryctl and the official client sent and consumed; stopped cleanly)"
