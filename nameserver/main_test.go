package nameserver

import (
	"strconv"
	"strings"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, leakOptions()...)
}

// leakOptions ignores the process-wide pollers netpoll starts once and never
// stops (as in package remoting's tests), and what the official Go client
// leaves behind after Producer.Shutdown (only the interop test uses it):
// the janitor of a package-level go-cache it creates at init, and the
// schedulers started by its rmqClient.Start, which sleep 1–10 s without
// watching for shutdown before they notice it and return.
func leakOptions() []goleak.Option {
	const rmqClientStart = "github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1."
	return leaktest.Netpoll(
		goleak.IgnoreAnyFunction("github.com/patrickmn/go-cache.(*janitor).Run"),
		goleak.IgnoreAnyFunction(rmqClientStart+"1"),
		goleak.IgnoreAnyFunction(rmqClientStart+"2"),
		goleak.IgnoreAnyFunction(rmqClientStart+"3"),
		goleak.IgnoreAnyFunction(rmqClientStart+"4"),
	)
}

// goRoute mirrors what the official Go client fills when it parses a route
// (internal/route.go); the parser lives in an internal package, so
// goClientDecodeRoute re-states its algorithm (spec §3.1) with the same
// libraries.
type goRoute struct {
	OrderTopicConf string
	Queues         []goRouteQueue
	Brokers        []goRouteBroker
}

type goRouteQueue struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
}

type goRouteBroker struct {
	Cluster    string
	BrokerName string
	Addrs      map[int64]string
}

// goClientDecodeRoute parses a route body as the Go client does: queueDatas
// with gjson + jsoniter, and for each brokerDatas item the raw brokerAddrs
// text minus its first and last byte, split on ',' and then at the first
// ':', with every '"' removed. Like the client it panics when brokerAddrs is
// missing.
func goClientDecodeRoute(body []byte) (*goRoute, error) {
	res := gjson.ParseBytes(body)
	r := &goRoute{OrderTopicConf: res.Get("orderTopicConf").String()}
	if err := jsoniter.Unmarshal([]byte(res.Get("queueDatas").String()), &r.Queues); err != nil {
		return nil, err
	}
	for _, v := range res.Get("brokerDatas").Array() {
		bd := goRouteBroker{
			BrokerName: v.Get("brokerName").String(),
			Cluster:    v.Get("cluster").String(),
			Addrs:      map[int64]string{},
		}
		addrs := v.Get("brokerAddrs").String()
		for _, piece := range strings.Split(addrs[1:len(addrs)-1], ",") {
			i := strings.Index(piece, ":")
			if i < 0 {
				continue
			}
			id, _ := strconv.ParseInt(strings.ReplaceAll(piece[:i], `"`, ""), 10, 64)
			bd.Addrs[id] = strings.ReplaceAll(piece[i+1:], `"`, "")
		}
		r.Brokers = append(r.Brokers, bd)
	}
	return r, nil
}
