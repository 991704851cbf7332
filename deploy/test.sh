#!/usr/bin/env bash
# The deployment's acceptance test (`make deploy-test`): two name servers and two broker
# groups (SYNC_MASTER + SLAVE) in containers on a private network. It sends messages,
# checks that each slave holds its master's records, kills a master with SIGKILL, checks
# that sends go on through the other group and that the killed master's slave has every
# acknowledged message, restarts the master and consumes everything. It leaves nothing
# behind (containers, volumes, network) unless FERRY_DEPLOY_KEEP=1.
set -euo pipefail
cd "$(dirname "$0")"
project=ferrydeploy
compose() { docker-compose -p "$project" "$@"; }
ctl() { docker exec ferry-namesrv1 /ferryctl -n "172.28.5.2:9876;172.28.5.3:9876" "$@"; }
cleanup() {
  if [ "${FERRY_DEPLOY_KEEP:-}" != 1 ]; then compose down -v --remove-orphans >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
fail() { echo "deploy-test: FAIL: $*" >&2; for c in broker-a broker-a-s broker-b broker-b-s; do echo "--- $c" >&2; docker logs --tail 20 "ferry-$c" >&2 || true; done; exit 1; }
wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for: $what"
    sleep 0.5
  done
}
http_get() { # http_get PATH: the body broker-a's HTTP listener (published on 127.0.0.1:9880) answers
  exec 3<>/dev/tcp/127.0.0.1/9880 && printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$1" >&3 && sed '1,/^\r$/d' <&3
  exec 3<&-
}
count_records() { # count_records CONTAINER: records in that broker's commit log (read-only dump)
  docker exec "ferry-$1" /ferryctl dump commitlog --data-dir /data --verify -o json | grep -o '"records": *[0-9]*' | grep -o '[0-9]*$'
}

compose down -v --remove-orphans >/dev/null 2>&1 || true
compose up -d --build
wait_for 60 "four brokers registered" sh -c "docker exec ferry-namesrv1 /ferryctl -n 172.28.5.2:9876 cluster list -o json | grep -c brokerId | grep -qx 4"
ctl topic create -t DeployTopic -c FerryCluster -r 4 -w 4 >/dev/null
wait_for 30 "the topic routed" ctl topic route -t DeployTopic

ctl send -t DeployTopic --count 400 "before the kill" -o json > /tmp/ferry-deploy-sent1.json || fail "sends to the SYNC_MASTERs"
wait_for 30 "broker-a-s holds broker-a's records" sh -c "[ \"\$(count_records broker-a-s)\" = \"\$(count_records broker-a)\" ]"
wait_for 30 "broker-b-s holds broker-b's records" sh -c "[ \"\$(count_records broker-b-s)\" = \"\$(count_records broker-b)\" ]"
in_a=$(http_get /metrics | grep '^rocketmq_messages_in_total{topic="DeployTopic"}' | grep -o '[0-9]*$' || true)
[ "${in_a:-0}" -gt 0 ] || fail "broker-a's /metrics counts no message in for DeployTopic"
http_get /readyz | grep -q '"ok":true' || fail "broker-a's /readyz is not ready"
echo "broker-a's /metrics counted $in_a messages in; /readyz ready"
before_a=$(count_records broker-a)
echo "broker-a stored $before_a records, its slave the same"

docker kill ferry-broker-a >/dev/null
ctl send -t DeployTopic --count 200 "after the kill" -o json > /tmp/ferry-deploy-sent2.json || fail "sends after a master was killed"
[ "$(count_records broker-a-s)" -ge "$before_a" ] || fail "broker-a-s lost records"
echo "sends went on through broker-b; broker-a-s still has all $before_a of broker-a's records"

docker start ferry-broker-a >/dev/null
wait_for 60 "broker-a back" sh -c "docker exec ferry-namesrv1 /ferryctl -n 172.28.5.2:9876 cluster list -o json | grep -c brokerId | grep -qx 4"
got=$(ctl consume -t DeployTopic -g deploy-check --from first --count 600 --timeout 30s -o json | wc -l)
[ "$got" -eq 600 ] || fail "consumed $got of 600 messages"
echo "deploy-test: OK (600 messages sent, 600 consumed, a master killed on the way)"
