#!/usr/bin/env bash
# The local deployment's test (`make cluster-test`): cluster.sh starts the 2m-2s cluster
# from a clean directory (sync, then async replication), Ferry's client (ferryctl) and the
# official RocketMQ Go client (examples/quickstart) send and consume through it, and it
# stops cleanly. Then the controller mode (three controllers, two groups of three brokers):
# it elects, sends and consumes, survives the SIGKILL of broker-a's master (another is
# elected; the killed broker, started again, rejoins as a slave), and stops cleanly. Uses
# ports 9876-9883 and 10911-10962 on 127.0.0.1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
work="$(mktemp -d)"
cleanup() {
  for d in "$work"/*/; do [ -f "$d/mode" ] && "$here/cluster.sh" stop --dir "$d" >/dev/null 2>&1; done
  rm -rf "$work"
}
trap cleanup EXIT
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
  # A SYNC_MASTER answers SLAVE_NOT_AVAILABLE until its slave has connected.
  for m in 127.0.0.1:10911 127.0.0.1:10931; do
    for _ in $(seq 1 100); do
      ctl broker status -b "$m" | grep -q 'ferryHaSlaves *1' && break
      sleep 0.2
    done
  done
  ctl send -t "Cluster$mode" --count 100 "hello $mode" >/dev/null
  got=$(ctl consume -t "Cluster$mode" -g "check-$mode" --from first --count 100 --timeout 30s -o json | wc -l)
  [ "$got" -eq 100 ] || { echo "cluster-test: ferryctl consumed $got of 100 ($mode)" >&2; exit 1; }
  (cd "$root/examples" && go run ./quickstart -namesrv 127.0.0.1:9876 -topic "Quick$mode") | tail -1 | grep -q done \
    || { echo "cluster-test: the official client's quickstart failed ($mode)" >&2; exit 1; }
  "$here/cluster.sh" status --dir "$dir" >/dev/null
  "$here/cluster.sh" stop --dir "$dir"
done

# Controller mode.
dir="$work/controller"
controllers=127.0.0.1:9878,127.0.0.1:9879,127.0.0.1:9880
fail() { echo "cluster-test: $* (controller mode)" >&2; "$work/ferryctl" ha status -b broker-a --controller "$controllers" >&2 || true; exit 1; }
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do [ $SECONDS -lt $deadline ] || fail "timed out waiting for: $what"; sleep 0.2; done
}
hastatus() { "$work/ferryctl" ha status -b "$1" --controller "$controllers" -o json | tr -d ' \n'; }
settled() { # settled GROUP: a master and three live brokers, all in the SyncStateSet
  local s; s=$(hastatus "$1") || return 1
  [ "$(grep -o '"alive":true' <<<"$s" | wc -l)" = 3 ] && [ "$(grep -o '"inSyncStateSet":true' <<<"$s" | wc -l)" = 3 ] &&
    grep -q '"role":"master"' <<<"$s"
}
master_addr() { hastatus "$1" | sed -n 's/.*"role":"master","addr":"\([0-9.:]*\)".*/\1/p'; }
"$here/cluster.sh" start --mode controller --dir "$dir"
wait_for 60 "broker-a settled" settled broker-a
wait_for 60 "broker-b settled" settled broker-b
wait_for 30 "six brokers registered" sh -c "[ \"\$('$work/ferryctl' -n '127.0.0.1:9876;127.0.0.1:9877' cluster list -o json | grep -c brokerId)\" = 6 ]"
created=$(date +%s%3N)
ctl topic create -t ClusterCtl -c FerryCluster -r 4 -w 4 >/dev/null
# A slave copies its master's topics every 10 s (slaveSyncInterval): until then a slave
# elected master would not serve the new topic. Wait until every slave has synced since.
synced() { # synced ADDR: a master, or a slave whose last metadata sync is after $created
  local s t
  s=$(ctl broker status -b "$1") || return 1
  grep -q 'brokerRole *SLAVE' <<<"$s" || return 0
  t=$(grep -o 'ferrySlaveSyncTime *[0-9]*' <<<"$s" | grep -o '[0-9]*$') && [ "$t" -gt "$created" ]
}
for p in 10911 10921 10931; do wait_for 30 "127.0.0.1:$p synced the topic" synced "127.0.0.1:$p"; done
ctl send -t ClusterCtl --count 100 "before the kill" >/dev/null
old=$(master_addr broker-a)
port=${old##*:}
name="broker-a-$(( (port - 10911) / 10 + 1 ))"
kill -KILL "$(cat "$dir/run/$name.pid")"
echo "killed broker-a's master $name ($old)"
new_master() { local a; a=$(master_addr broker-a) && [ -n "$a" ] && [ "$a" != "$old" ]; }
wait_for 30 "a new master of broker-a" new_master
new=$(master_addr broker-a)
echo "the controllers elected $new"
wait_for 30 "the new master routed" sh -c "'$work/ferryctl' -n 127.0.0.1:9876 cluster list | grep -q 'broker-a *0 *$new'"
ctl send -t ClusterCtl --count 100 "after the kill" >/dev/null || fail "sends after the kill"
"$here/cluster.sh" start --mode controller --dir "$dir" >/dev/null # starts the killed broker again
wait_for 60 "the killed broker back in the SyncStateSet" settled broker-a
[ "$(master_addr broker-a)" = "$new" ] || fail "the returning broker took over"
got=$(ctl consume -t ClusterCtl -g check-ctl --from first --count 200 --timeout 30s -o json | wc -l)
[ "$got" -eq 200 ] || fail "ferryctl consumed $got of 200"
"$here/cluster.sh" status --dir "$dir" >/dev/null
"$here/cluster.sh" stop --dir "$dir"
echo "cluster-test: OK (sync and async: ferryctl and the official client sent and consumed; controller mode: elected, a master killed and replaced, it rejoined as a slave; stopped cleanly)"
