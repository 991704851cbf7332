package protocol

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/ferrymq/ferry/internal/jsonstr"
)

// TopicRouteData is the body of a successful GET_ROUTEINFO_BY_TOPIC (105)
// response: which brokers host a topic and with how many queues.
//
// Encode it with [EncodeTopicRouteData] (json.Marshal uses the same
// encoder); decode it with [DecodeTopicRouteData].
type TopicRouteData struct {
	// OrderTopicConf is "brokerA:4;brokerB:4" for ordered topics; when it is
	// non-empty the Go client builds publish queues only from it.
	OrderTopicConf string       `json:"orderTopicConf"`
	QueueDatas     []QueueData  `json:"queueDatas"`
	BrokerDatas    []BrokerData `json:"brokerDatas"`
}

// QueueData describes a topic's queues on one broker group.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"` // Perm* bits
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerData describes one broker group: its cluster, name and the address
// of each member (id 0 = master, 1.. = slaves).
type BrokerData struct {
	Cluster            string           `json:"cluster"`
	BrokerName         string           `json:"brokerName"`
	BrokerAddrs        map[int64]string `json:"brokerAddrs"`
	EnableActingMaster bool             `json:"enableActingMaster"`
	ZoneName           string           `json:"zoneName"`
}

// MasterAddr returns the address of broker id 0, or "" if there is none.
func (b *BrokerData) MasterAddr() string { return b.BrokerAddrs[0] }

// EncodeTopicRouteData encodes a route as compact JSON that both the Go
// client's hand-written parser and Java's fastjson accept:
//
//	{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.5:10911"},"brokerName":"broker-a",
//	  "cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},
//	  "queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,
//	  "topicSysFlag":0,"writeQueueNums":4}]}
//
// (shown wrapped; the output has no whitespace). Object keys are in
// alphabetical order, brokerDatas and queueDatas are sorted by broker name,
// brokerAddrs by id with quoted keys and is written as {} when empty,
// filterServerTable is always {}, orderTopicConf and zoneName only when
// non-empty. An address that is empty or contains whitespace, control or
// non-ASCII bytes, '"', ',' or '\' is rejected with ErrBadBody because the
// Go client would mangle it. The input is not modified.
func EncodeTopicRouteData(r *TopicRouteData) ([]byte, error) {
	return appendTopicRouteData(make([]byte, 0, 256), r)
}

// MarshalJSON encodes r with [EncodeTopicRouteData].
func (r TopicRouteData) MarshalJSON() ([]byte, error) { return EncodeTopicRouteData(&r) }

// MarshalJSON encodes b in the compact, quoted-key form described at
// [EncodeTopicRouteData].
func (b BrokerData) MarshalJSON() ([]byte, error) { return appendBrokerData(nil, &b) }

// DecodeTopicRouteData decodes a route body, accepting both quoted and
// fastjson's bare integer brokerAddrs keys. Empty lists and maps decode as
// nil. Errors wrap ErrBadBody.
func DecodeTopicRouteData(data []byte) (*TopicRouteData, error) {
	var r TopicRouteData
	if err := decodeJSON("topic route", data, &r); err != nil {
		return nil, err
	}
	r.QueueDatas = nilIfEmpty(r.QueueDatas)
	r.BrokerDatas = nilIfEmpty(r.BrokerDatas)
	for i := range r.BrokerDatas {
		r.BrokerDatas[i].BrokerAddrs = nilMapIfEmpty(r.BrokerDatas[i].BrokerAddrs)
	}
	return &r, nil
}

func appendTopicRouteData(b []byte, r *TopicRouteData) ([]byte, error) {
	bds := slices.Clone(r.BrokerDatas)
	slices.SortStableFunc(bds, compareBrokerData)
	qds := slices.Clone(r.QueueDatas)
	slices.SortStableFunc(qds, compareQueueData)

	var err error
	b = append(b, `{"brokerDatas":[`...)
	for i := range bds {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendBrokerData(b, &bds[i]); err != nil {
			return nil, err
		}
	}
	b = append(b, `],"filterServerTable":{}`...)
	if r.OrderTopicConf != "" {
		b = append(b, `,"orderTopicConf":`...)
		b = jsonstr.Append(b, r.OrderTopicConf)
	}
	b = append(b, `,"queueDatas":[`...)
	for i := range qds {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQueueData(b, &qds[i])
	}
	return append(b, "]}"...), nil
}

func compareBrokerData(x, y BrokerData) int {
	return cmp.Or(cmp.Compare(x.BrokerName, y.BrokerName), cmp.Compare(x.Cluster, y.Cluster))
}

func compareQueueData(x, y QueueData) int {
	return cmp.Or(
		cmp.Compare(x.BrokerName, y.BrokerName),
		cmp.Compare(x.ReadQueueNums, y.ReadQueueNums),
		cmp.Compare(x.WriteQueueNums, y.WriteQueueNums),
		cmp.Compare(x.Perm, y.Perm),
		cmp.Compare(x.TopicSysFlag, y.TopicSysFlag),
	)
}

func appendQueueData(b []byte, q *QueueData) []byte {
	b = append(b, `{"brokerName":`...)
	b = jsonstr.Append(b, q.BrokerName)
	b = append(b, `,"perm":`...)
	b = strconv.AppendInt(b, int64(q.Perm), 10)
	b = append(b, `,"readQueueNums":`...)
	b = strconv.AppendInt(b, int64(q.ReadQueueNums), 10)
	b = append(b, `,"topicSysFlag":`...)
	b = strconv.AppendInt(b, int64(q.TopicSysFlag), 10)
	b = append(b, `,"writeQueueNums":`...)
	b = strconv.AppendInt(b, int64(q.WriteQueueNums), 10)
	return append(b, '}')
}

func appendBrokerData(b []byte, bd *BrokerData) ([]byte, error) {
	b = append(b, `{"brokerAddrs":{`...)
	for i, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
		addr := bd.BrokerAddrs[id]
		if err := checkBrokerAddr(addr); err != nil {
			return nil, fmt.Errorf("%w: broker %q id %d: %w", ErrBadBody, bd.BrokerName, id, err)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `":"`...)
		b = append(b, addr...)
		b = append(b, '"')
	}
	b = append(b, `},"brokerName":`...)
	b = jsonstr.Append(b, bd.BrokerName)
	b = append(b, `,"cluster":`...)
	b = jsonstr.Append(b, bd.Cluster)
	b = append(b, `,"enableActingMaster":`...)
	b = strconv.AppendBool(b, bd.EnableActingMaster)
	if bd.ZoneName != "" {
		b = append(b, `,"zoneName":`...)
		b = jsonstr.Append(b, bd.ZoneName)
	}
	return append(b, '}'), nil
}

// checkBrokerAddr rejects addresses the Go client's route parser would
// mangle: it splits the raw brokerAddrs text on ',' and strips every '"'.
func checkBrokerAddr(addr string) error {
	if addr == "" {
		return fmt.Errorf("empty broker address")
	}
	for i := 0; i < len(addr); i++ {
		c := addr[i]
		if c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == '\\' {
			return fmt.Errorf("broker address %q has unsafe byte %q", addr, c)
		}
	}
	return nil
}

// ClusterInfo is the body of a GET_BROKER_CLUSTER_INFO (106) response.
type ClusterInfo struct {
	// BrokerAddrTable maps a broker name to its BrokerData.
	BrokerAddrTable map[string]BrokerData `json:"brokerAddrTable"`
	// ClusterAddrTable maps a cluster name to its broker names.
	ClusterAddrTable map[string][]string `json:"clusterAddrTable"`
}

// EncodeClusterInfo encodes c as compact JSON with sorted keys, sorted and
// de-duplicated broker-name lists, and BrokerData written as in
// [EncodeTopicRouteData]. The input is not modified.
func EncodeClusterInfo(c *ClusterInfo) ([]byte, error) {
	b := append(make([]byte, 0, 256), `{"brokerAddrTable":{`...)
	var err error
	for i, name := range slices.Sorted(maps.Keys(c.BrokerAddrTable)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, name)
		b = append(b, ':')
		bd := c.BrokerAddrTable[name]
		if b, err = appendBrokerData(b, &bd); err != nil {
			return nil, err
		}
	}
	b = append(b, `},"clusterAddrTable":{`...)
	for i, cluster := range slices.Sorted(maps.Keys(c.ClusterAddrTable)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, cluster)
		b = append(b, ":["...)
		names := slices.Compact(slices.Sorted(slices.Values(c.ClusterAddrTable[cluster])))
		for j, n := range names {
			if j > 0 {
				b = append(b, ',')
			}
			b = jsonstr.Append(b, n)
		}
		b = append(b, ']')
	}
	return append(b, "}}"...), nil
}

// MarshalJSON encodes c with [EncodeClusterInfo].
func (c ClusterInfo) MarshalJSON() ([]byte, error) { return EncodeClusterInfo(&c) }

// DecodeClusterInfo decodes a cluster-info body, accepting fastjson's bare
// integer brokerAddrs keys. Empty maps and lists decode as nil. Errors wrap
// ErrBadBody.
func DecodeClusterInfo(data []byte) (*ClusterInfo, error) {
	var c ClusterInfo
	if err := decodeJSON("cluster info", data, &c); err != nil {
		return nil, err
	}
	c.BrokerAddrTable = nilMapIfEmpty(c.BrokerAddrTable)
	for name, bd := range c.BrokerAddrTable {
		bd.BrokerAddrs = nilMapIfEmpty(bd.BrokerAddrs)
		c.BrokerAddrTable[name] = bd
	}
	c.ClusterAddrTable = nilMapIfEmpty(c.ClusterAddrTable)
	for name, list := range c.ClusterAddrTable {
		c.ClusterAddrTable[name] = nilIfEmpty(list)
	}
	return &c, nil
}

// TopicList is the body of a GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)
// response: {"topicList":["TopicA","%RETRY%g1"]}. Java may add brokerAddr.
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// EncodeTopicList encodes t as compact JSON, keeping the caller's order and
// writing an empty list as [].
func EncodeTopicList(t *TopicList) ([]byte, error) {
	out := *t
	if out.TopicList == nil {
		out.TopicList = []string{}
	}
	type plain TopicList
	b, err := json.Marshal(plain(out))
	if err != nil {
		return nil, fmt.Errorf("%w: topic list: %w", ErrBadBody, err)
	}
	return b, nil
}

// DecodeTopicList decodes a topic-list body. An empty list decodes as nil.
// Errors wrap ErrBadBody.
func DecodeTopicList(data []byte) (*TopicList, error) {
	var t TopicList
	if err := decodeJSON("topic list", data, &t); err != nil {
		return nil, err
	}
	t.TopicList = nilIfEmpty(t.TopicList)
	return &t, nil
}

func nilIfEmpty[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}

func nilMapIfEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if len(m) == 0 {
		return nil
	}
	return m
}
