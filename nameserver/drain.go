package nameserver

// Broker drain: WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER (327).
//
//   - 205: ext brokerName (required) → SUCCESS with ext wipeTopicCount, the number of
//     topics hosting the broker group. From then on every route this name server
//     answers gives that group's queue data without the write bit (PERM_WRITE), so
//     producers send to the other groups while consumers keep reading the drained
//     one.
//   - 327: ext brokerName (required) → SUCCESS with ext addTopicCount, counted the
//     same way; routes give the group's queue data with the perm its broker
//     registered again.
//   - missing brokerName → SYSTEM_ERROR; the drain record could not be saved →
//     SYSTEM_ERROR, nothing changed.
//
// RocketMQ rewrites the stored queue data in place, so its drain lasts until the
// broker's next registration that carries a new data version (a topic created or
// changed on the broker) rewrites the queue data with the broker's own perms, and a
// name server restart forgets it. Ferry keeps the drain apart from the queue data:
// a drained broker name is a mark that TopicRoute applies when it answers, so no
// registration reverts it (every 30 s, whatever its data version), a broker group
// that registers later under a drained name starts drained, and ADD_WRITE_PERM
// restores exactly the perms the broker registered (a read-only topic stays
// read-only, where RocketMQ would set READ|WRITE). The mark is saved in the KV
// configuration (namespace FERRY_DRAINED_BROKERS, key the broker name), so it also
// outlives a name server restart; PUT_KV_CONFIG and DELETE_KV_CONFIG on that
// namespace drain and undrain as 205 and 327 do. Only `undrain` (or deleting the
// entry) ends a drain.
//
// Draining a name that no broker registered is accepted (count 0) and takes effect
// when such a broker registers; ferryctl checks the name against the cluster first.

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Drain marks broker group name as drained: from now on TopicRoute answers its queue
// data without the write bit. It returns the number of topics hosting the group.
func (t *RouteTable) Drain(name string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.mu.drained[name] = struct{}{}
	return t.hostedLocked(name)
}

// Undrain removes the drain mark of broker group name and returns the number of
// topics hosting the group.
func (t *RouteTable) Undrain(name string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.mu.drained, name)
	return t.hostedLocked(name)
}

// Drained returns the drained broker names, sorted.
func (t *RouteTable) Drained() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Sorted(maps.Keys(t.mu.drained))
}

// hostedLocked counts the topics with queue data of broker group name.
func (t *RouteTable) hostedLocked(name string) int {
	n := 0
	for _, queues := range t.mu.topics {
		if _, ok := queues[name]; ok {
			n++
		}
	}
	return n
}

// setDrained drains (on) or undrains broker group name: records it in the KV
// configuration, then marks the table. It returns the topic count of Drain or
// Undrain. Callers hold s.drainMu.
func (s *Server) setDrained(name string, on bool) (int, error) {
	if on {
		if err := s.kv.put(NamespaceDrainedBrokers, name, s.opts.Clock().UTC().Format(time.RFC3339)); err != nil {
			return 0, err
		}
		return s.table.Drain(name), nil
	}
	if _, err := s.kv.remove(NamespaceDrainedBrokers, name); err != nil {
		return 0, err
	}
	return s.table.Undrain(name), nil
}

// handleWipeWritePerm serves WIPE_WRITE_PERM_OF_BROKER.
func (s *Server) handleWipeWritePerm(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return s.handleWritePerm(ch, req, true)
}

// handleAddWritePerm serves ADD_WRITE_PERM_OF_BROKER.
func (s *Server) handleAddWritePerm(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	return s.handleWritePerm(ch, req, false)
}

// handleWritePerm drains (wipe) or undrains a broker group and answers the count.
func (s *Server) handleWritePerm(ch remoting.Channel, req *remoting.Command, wipe bool) (*remoting.Command, error) {
	var hdr protocol.BrokerWritePermRequestHeader
	if err := hdr.DecodeExt(req.ExtFields); err != nil {
		return nil, systemError("broker write perm: " + err.Error())
	}
	s.drainMu.Lock()
	n, err := s.setDrained(hdr.BrokerName, wipe)
	s.drainMu.Unlock()
	if err != nil {
		s.log.Error().Err(err).Str("brokerName", hdr.BrokerName).Bool("drain", wipe).Msg("broker drain not saved")
		return nil, systemError(err.Error())
	}
	msg := "broker undrained: routes give its queues their registered perms again"
	if wipe {
		msg = "broker drained: routes give its queues without write permission"
	}
	s.log.Info().Str("brokerName", hdr.BrokerName).Int("topics", n).Str("remote", ch.RemoteAddr()).Msg(msg)
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	if wipe {
		resp.ExtFields = protocol.NewExt(&protocol.WipeWritePermOfBrokerResponseHeader{WipeTopicCount: int32(n)})
	} else {
		resp.ExtFields = protocol.NewExt(&protocol.AddWritePermOfBrokerResponseHeader{AddTopicCount: int32(n)})
	}
	return resp, nil
}
