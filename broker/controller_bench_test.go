package broker_test

import (
	"context"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// BenchmarkReplicatedSend: 1 KiB sends that wait for replication, from 8 senders per core
// over loopback, to a fixed-role SYNC_MASTER with one slave (any slave's acknowledgement) and
// to a controller-mode master with allAckInSyncStateSet and one or two slaves (every
// member's). ns/op is per acknowledged send; all brokers share the machine's cores.
func BenchmarkReplicatedSend(b *testing.B) {
	for _, tc := range []struct {
		name   string
		ctl    bool
		slaves int
	}{{"fixed/1 slave", false, 1}, {"controller allAck/1 slave", true, 1}, {"controller allAck/2 slaves", true, 2}} {
		b.Run(tc.name, func(b *testing.B) {
			ids := []int64{1}
			for i := range tc.slaves {
				ids = append(ids, int64(i+2))
			}
			k := newFakeKeeper(1, 1, ids...)
			mo := ctlMaster(b, 1, k)
			if !tc.ctl {
				mo.ControllerMode, mo.MasterEpoch, mo.AssignedID, mo.SyncStateSet, mo.AllAckInSyncStateSet = false, 0, 0, nil, false
			}
			mo.HASlaveTimeout = 5 * time.Second
			m, maddr, _ := runBroker(b, mo, "")
			for _, id := range ids[1:] {
				so := ctlSlave(b, 1, id, m.HAAddr())
				if !tc.ctl {
					so.ControllerMode, so.MasterEpoch = false, 0
				}
				runBroker(b, so, "")
			}
			rc := newRemoting(b)
			props, err := message.EncodeProperties(map[string]string{message.PropertyWaitStoreMsgOK: "true"})
			if err != nil {
				b.Fatal(err)
			}
			send := func() int16 {
				req := protocol.NewRequest(protocol.SendMessageV2, &protocol.SendMessageRequestHeaderV2{
					SendMessageRequestHeader: protocol.SendMessageRequestHeader{ProducerGroup: "BenchPG", Topic: "BenchTopic",
						DefaultTopic: "TBW102", DefaultTopicQueueNums: 8, BornTimestamp: time.Now().UnixMilli(), Properties: string(props)}})
				req.Body = make([]byte, 1024)
				resp, err := rc.Invoke(context.Background(), maddr, req)
				if err != nil {
					b.Error(err)
					return -1
				}
				return resp.Code
			}
			testkit.Eventually(b, 10*time.Second, func() bool {
				return send() == int16(protocol.Success) && (!tc.ctl || k.hasSet(ids...))
			}, "every slave acknowledging")
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if code := send(); code != int16(protocol.Success) {
						b.Errorf("send answered %d", code)
						return
					}
				}
			})
			b.StopTimer()
		})
	}
}
