package broker

// GET_ALL_TOPIC_CONFIG (21), GET_ALL_CONSUMER_OFFSET (43), GET_ALL_DELAY_OFFSET (45).
//
// Behaviour: each answers SUCCESS with the whole table as RocketMQ's broker does — the
// topic table with its data version, the consumer offsets as consumerOffset.json's
// shape, the delay-level cursors as delayOffset.json's. A slave reads them (with
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG) from its master to copy the metadata that is not in
// the commit log (slavesync.go); tools may read them too. No ext fields.
//
// With ACL on, GET_ALL_TOPIC_CONFIG shows a non-admin account only the topics it may
// PUB or SUB (acl.Rule Filtered); the other two are admin-only (the gate refuses them).

import (
	"context"
	"strings"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/broker/offsets"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// metadataHandler serves the whole-table reads.
type metadataHandler struct {
	topics  TopicTable
	offsets interface{ Snapshot() map[offsets.Key]int64 }
	delay   interface {
		LevelOffsets() map[int]int64
		TimerProgress() (watermark int64, delivered [][2]int64)
	}
}

func (m *metadataHandler) handleAllTopicConfig(ctx context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	w := m.topics.All()
	if g := acl.GrantFrom(ctx); !g.Unrestricted() {
		for name := range w.TopicConfigTable {
			if !g.MayTopic(name, acl.PermAny) {
				delete(w.TopicConfigTable, name)
			}
		}
	}
	body, err := protocol.EncodeTopicConfigSerializeWrapper(&w)
	return bodyResponse(req, body, err)
}

func (m *metadataHandler) handleAllConsumerOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	w := protocol.ConsumerOffsetSerializeWrapper{OffsetTable: map[string]map[int32]int64{}}
	for k, off := range m.offsets.Snapshot() {
		key := k.Topic + "@" + k.Group
		q := w.OffsetTable[key]
		if q == nil {
			q = map[int32]int64{}
			w.OffsetTable[key] = q
		}
		q[k.QueueID] = off
	}
	body, err := protocol.EncodeConsumerOffsetSerializeWrapper(&w)
	return bodyResponse(req, body, err)
}

func (m *metadataHandler) handleAllDelayOffset(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	levels := m.delay.LevelOffsets()
	w := protocol.DelayOffsetSerializeWrapper{OffsetTable: make(map[int32]int64, len(levels))}
	for level, off := range levels {
		w.OffsetTable[int32(level)] = off
	}
	tw, done := m.delay.TimerProgress()
	w.TimerProgress = &protocol.TimerProgress{Watermark: tw, Delivered: done}
	body, err := protocol.EncodeDelayOffsetSerializeWrapper(&w)
	return bodyResponse(req, body, err)
}

// offsetKeys turns a GET_ALL_CONSUMER_OFFSET table into store keys; "<topic>@<group>"
// keys without both parts are skipped (topic names cannot hold '@').
func offsetKeys(w *protocol.ConsumerOffsetSerializeWrapper) map[offsets.Key]int64 {
	out := make(map[offsets.Key]int64)
	for key, queues := range w.OffsetTable {
		topic, group, ok := strings.Cut(key, "@")
		if !ok || topic == "" || group == "" {
			continue
		}
		for q, off := range queues {
			out[offsets.Key{Group: group, Topic: topic, QueueID: q}] = off
		}
	}
	return out
}

// delayLevels turns a GET_ALL_DELAY_OFFSET table into level → offset.
func delayLevels(w *protocol.DelayOffsetSerializeWrapper) map[int]int64 {
	out := make(map[int]int64, len(w.OffsetTable))
	for level, off := range w.OffsetTable {
		out[int(level)] = off
	}
	return out
}
