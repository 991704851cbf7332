package protocol

import (
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"
	"github.com/tidwall/gjson"
)

// goRouteQueue and goRouteBroker mirror the shapes the official Go client
// fills when it parses a route (internal/route.go); its parser lives in an
// internal package, so goClientDecodeRoute re-states the algorithm of spec
// §3.1 with the same libraries (gjson, jsoniter).
type goRouteQueue struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
	TopicSynFlag   int    `json:"topicSynFlag"`
}

type goRouteBroker struct {
	Cluster         string
	BrokerName      string
	BrokerAddresses map[int64]string
}

type goRoute struct {
	OrderTopicConf string
	Queues         []*goRouteQueue
	Brokers        []*goRouteBroker
}

// goClientDecodeRoute parses body the way the Go client does: queueDatas via
// gjson + jsoniter, orderTopicConf via gjson, and for each brokerDatas item
// the raw brokerAddrs text with its first and last byte dropped, split on ','
// and then at the first ':', with every '"' removed. Like the client it
// panics when brokerAddrs is missing.
func goClientDecodeRoute(body string) (*goRoute, error) {
	res := gjson.Parse(body)
	r := &goRoute{}
	if err := jsoniter.Unmarshal([]byte(res.Get("queueDatas").String()), &r.Queues); err != nil {
		return nil, err
	}
	r.OrderTopicConf = res.Get("orderTopicConf").String()
	for _, v := range res.Get("brokerDatas").Array() {
		bd := &goRouteBroker{
			BrokerName:      v.Get("brokerName").String(),
			Cluster:         v.Get("cluster").String(),
			BrokerAddresses: map[int64]string{},
		}
		addrs := v.Get("brokerAddrs").String()
		for _, piece := range strings.Split(addrs[1:len(addrs)-1], ",") {
			i := strings.Index(piece, ":")
			if i < 0 {
				continue
			}
			id, _ := strconv.ParseInt(strings.ReplaceAll(piece[:i], `"`, ""), 10, 64)
			bd.BrokerAddresses[id] = strings.ReplaceAll(piece[i+1:], `"`, "")
		}
		r.Brokers = append(r.Brokers, bd)
	}
	return r, nil
}

// goClientConsumerIDs parses a GET_CONSUMER_LIST_BY_GROUP body like the Go
// client (consumer/consumer.go: gjson "consumerIdList").
func goClientConsumerIDs(body string) []string {
	var ids []string
	for _, v := range gjson.Parse(body).Get("consumerIdList").Array() {
		ids = append(ids, v.String())
	}
	return ids
}
