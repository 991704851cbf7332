#!/usr/bin/env bash
# The controller-mode deployment's acceptance test (`make deploy-controller-test`): two name
# servers, three controllers and two broker groups of three brokers in controller mode
# (docker-compose.controller.yml). It waits until the controllers have a leader and each
# group a master with all three brokers in its SyncStateSet, sends messages, kills the
# master of broker-a with SIGKILL, checks that the controllers elect another and sends go
# on, starts the killed broker again and checks that it rejoins as a slave, then consumes
# everything. Once the groups settled, every process's /readyz (httpListen, port 9880: the
# Helm chart's readiness probe) must answer ready. It leaves nothing behind (containers,
# volumes, networks) unless FERRY_DEPLOY_KEEP=1.
set -euo pipefail
cd "$(dirname "$0")"
project=ferrycm
compose() { docker-compose -p "$project" -f docker-compose.controller.yml "$@"; }
controllers=172.28.7.2:9878,172.28.7.3:9878,172.28.7.4:9878
# ferryctl in the containers: controller commands from controller1 (internal network),
# client commands from namesrv1 (public network).
cctl() { docker exec ferry-cm-controller1 /ferryctl --controller "$controllers" "$@"; }
ctl() { docker exec ferry-cm-namesrv1 /ferryctl -n "172.28.6.2:9876;172.28.6.3:9876" "$@"; }
cleanup() {
  if [ "${FERRY_DEPLOY_KEEP:-}" != 1 ]; then compose down -v --remove-orphans >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
fail() {
  echo "deploy-controller-test: FAIL: $*" >&2
  cctl controller status >&2 || true
  cctl ha status -b broker-a >&2 || true
  for c in broker-a-1 broker-a-2 broker-a-3; do echo "--- $c" >&2; docker logs --tail 15 "ferry-cm-$c" >&2 || true; done
  exit 1
}
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for: $what"
    sleep 0.5
  done
}
# field JSON KEY: the first integer value of "KEY" in ferryctl's JSON.
field() { grep -o "\"$2\": *[0-9]*" <<<"$1" | head -1 | grep -o '[0-9]*$'; }
# settled GROUP: the group has a master and three live brokers, all in the SyncStateSet.
settled() {
  local s
  s=$(cctl ha status -b "$1" -o json) || return 1
  [ "$(field "$s" master)" -gt 0 ] &&
    [ "$(grep -c '"alive": true' <<<"$s")" = 3 ] &&
    [ "$(grep -c '"inSyncStateSet": true' <<<"$s")" = 3 ]
}
# master_addr GROUP: the public address of the group's master.
master_addr() {
  cctl ha status -b "$1" -o json | tr -d ' \n' | sed -n 's/.*"role":"master","addr":"\([0-9.:]*\)".*/\1/p'
}

compose down -v --remove-orphans >/dev/null 2>&1 || true
compose up -d --build
wait_for 60 "a controller leader" sh -c "docker exec ferry-cm-controller1 /ferryctl --controller $controllers controller status | grep -q Leader"
wait_for 90 "broker-a settled" settled broker-a
wait_for 90 "broker-b settled" settled broker-b
wait_for 60 "six brokers registered" sh -c "docker exec ferry-cm-namesrv1 /ferryctl -n 172.28.6.2:9876 cluster list -o json | grep -c brokerId | grep -qx 6"
# Every process answers /readyz ready on its httpListen (port 9880): the readiness probe
# of the Helm chart (deploy/helm/ferry), which runs these settings.
ready() { # ready ADDR: /readyz at ADDR:9880 answers {"ok":true}
  local body
  body=$(exec 3<>"/dev/tcp/$1/9880" && printf 'GET /readyz HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" >&3 && cat <&3) || return 1
  grep -q '"ok":true' <<<"$body"
}
for addr in 172.28.6.2 172.28.6.3 172.28.7.2 172.28.7.3 172.28.7.4 \
  172.28.6.11 172.28.6.12 172.28.6.13 172.28.6.21 172.28.6.22 172.28.6.23; do
  wait_for 30 "$addr:9880/readyz ready" ready "$addr"
done
created=$(date +%s%3N)
ctl topic create -t DeployTopic -c FerryCluster -r 4 -w 4 >/dev/null
wait_for 30 "the topic routed" ctl topic route -t DeployTopic
# A slave copies the master's topics every 10 s (slaveSyncInterval): wait until each slave
# of broker-a has synced since the topic was created, so whichever is elected serves it.
synced() { # synced ADDR: a master, or a slave whose last metadata sync is after $created
  local s t
  s=$(ctl broker status -b "$1") || return 1
  grep -q 'brokerRole *SLAVE' <<<"$s" || return 0
  t=$(grep -o 'ferrySlaveSyncTime *[0-9]*' <<<"$s" | grep -o '[0-9]*$') && [ "$t" -gt "$created" ]
}
for i in 1 2 3; do wait_for 30 "broker-a-$i synced the topic" synced "172.28.6.1$i:10911"; done
ctl send -t DeployTopic --count 400 "before the kill" >/dev/null || fail "sends before the kill"
epoch_before=$(field "$(cctl ha status -b broker-a -o json)" masterEpoch)
old=$(master_addr broker-a)
old_name="ferry-cm-broker-a-${old:10:1}" # 172.28.6.1N:10911 is broker-a-N
echo "broker-a's master is $old ($old_name, epoch $epoch_before); killing it"

docker kill "$old_name" >/dev/null
new_master() { local a; a=$(master_addr broker-a) && [ "$a" != "$old" ] && [ "$(field "$(cctl ha status -b broker-a -o json)" masterEpoch)" -gt "$epoch_before" ]; }
wait_for 30 "a new master of broker-a" new_master
new=$(master_addr broker-a)
echo "the controllers elected $new"
wait_for 30 "the new master routed" sh -c "docker exec ferry-cm-namesrv1 /ferryctl -n 172.28.6.2:9876 cluster list | grep 'broker-a *0 *$new'"
ctl send -t DeployTopic --count 200 "after the kill" >/dev/null || fail "sends after the master was killed"

docker start "$old_name" >/dev/null
wait_for 90 "the killed broker back in broker-a's SyncStateSet" settled broker-a
[ "$(master_addr broker-a)" = "$new" ] || fail "the returning broker took over"
echo "$old rejoined broker-a as a slave of $new"

got=$(ctl consume -t DeployTopic -g deploy-check --from first --count 600 --timeout 60s -o json | wc -l)
[ "$got" -eq 600 ] || fail "consumed $got of 600 messages"
echo "deploy-controller-test: OK (elected on start, every /readyz ready, a master killed and replaced, it rejoined as a slave; 600 messages sent, 600 consumed)"
