package nameserver

import (
	"strconv"
	"testing"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// FuzzRegisterBody feeds arbitrary bytes as a REGISTER_BROKER body through
// the whole decode + register path, as a master and then as its slave, and
// checks that whatever was accepted is served as routes the Go client can
// parse. It must never panic. Seeds: testdata/fuzz/FuzzRegisterBody.
func FuzzRegisterBody(f *testing.F) {
	f.Add([]byte(`{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,` +
		`"timestamp":1700000000000},"topicConfigTable":{"TopicA":{"topicName":"TopicA","readQueueNums":4,` +
		`"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG","topicSysFlag":0,"order":false,"attributes":{}}},` +
		`"topicQueueMappingInfoMap":{}}}`))
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"":{"topicName":""},"k":{}}}}`))
	f.Add([]byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{0:{"topicName":"x","perm":-1}}}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte{})
	f.Add([]byte{0x78, 0x9c, 0x03, 0x00})

	f.Fuzz(func(t *testing.T, body []byte) {
		rt, err := NewRouteTable(DefaultRouteTableOptions())
		if err != nil {
			t.Fatal(err)
		}
		for id, addr := range []string{"10.0.0.5:10911", "10.0.0.6:10911"} {
			h := regHeader("c1", "broker-a", addr, int64(id))
			ext := protocol.NewExt(h)
			if id == 1 {
				ext.Set("bodyCrc32", strconv.Itoa(int(bodyCRC(body))))
			}
			req := remoting.NewRequestExt(int16(protocol.RegisterBroker), ext)
			req.Body = body
			resp, _, _, err := registerCommand(rt, req, Registrant{ChannelID: uint64(id + 1)}, t0)
			if err != nil {
				if resp != nil {
					t.Fatalf("error %v with a response", err)
				}
				continue
			}
			if resp.Code != int16(protocol.Success) {
				t.Fatalf("code %d without an error", resp.Code)
			}
		}
		for _, topic := range rt.TopicList() {
			route, ok := rt.TopicRoute(topic)
			if !ok {
				t.Fatalf("listed topic %q has no route", topic)
			}
			enc, err := protocol.EncodeTopicRouteData(&route)
			if err != nil {
				t.Fatalf("route of %q: %v", topic, err)
			}
			got, err := goClientDecodeRoute(enc)
			if err != nil {
				t.Fatalf("Go client cannot parse the route of %q: %v\n%s", topic, err, enc)
			}
			if len(got.Brokers) != 1 || got.Brokers[0].Addrs[0] != "10.0.0.5:10911" {
				t.Fatalf("route of %q: brokers %+v", topic, got.Brokers)
			}
		}
		info := rt.ClusterInfo()
		if _, err := protocol.EncodeClusterInfo(&info); err != nil {
			t.Fatal(err)
		}
		rt.RemoveByChannel(1)
		rt.RemoveByChannel(2)
		if len(rt.TopicList()) != 0 || len(rt.Brokers()) != 0 {
			t.Fatal("state left after every broker was removed")
		}
	})
}

// TestRegisterJavaShapedBody registers a body as a Java 5.x broker writes it
// (fastjson: alphabetical keys, bare integer keys in the mapping table).
func TestRegisterJavaShapedBody(t *testing.T) {
	rt := newTable(t, nil)
	body := []byte(`{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":12,` +
		`"stateVersion":0,"timestamp":1700000000123},"topicConfigTable":{"TopicA":{"attributes":{},"order":false,` +
		`"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"TopicA","topicSysFlag":0,` +
		`"writeQueueNums":4}},"topicQueueMappingInfoMap":{0:{"bname":"broker-a"}}}}`)
	ext := protocol.NewExt(regHeader("DefaultCluster", "broker-a", "10.0.0.5:10911", 0))
	ext.Set("bodyCrc32", strconv.Itoa(int(bodyCRC(body))))
	ext.Set("compressed", "false")
	req := remoting.NewRequestExt(int16(protocol.RegisterBroker), ext)
	req.Body = body
	resp, hdr, res, err := registerCommand(rt, req, Registrant{ChannelID: 1}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Code != 0 || hdr.BrokerName != "broker-a" || !res.TopicsUpdated || res.DataVersion.Counter != 12 {
		t.Fatalf("resp %v hdr %+v res %+v", resp, hdr, res)
	}
	if got := routeQueues(t, rt, "TopicA"); got["broker-a"] != 4 {
		t.Fatalf("route %v", got)
	}
}
