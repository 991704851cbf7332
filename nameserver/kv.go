package nameserver

// KV configuration requests (tools; mqadmin updateKvConfig, deleteKvConfig,
// updateOrderConf):
//   - PUT_KV_CONFIG (100): ext namespace, key, value (required) → SUCCESS once the
//     entry is saved; SYSTEM_ERROR when it could not be (nothing changed).
//   - GET_KV_CONFIG (101): ext namespace, key (required) → SUCCESS with ext value, or
//     QUERY_NOT_FOUND (22) "No config item, Namespace: N Key: K".
//   - DELETE_KV_CONFIG (102): ext namespace, key (required) → SUCCESS, also when the
//     entry did not exist; SYSTEM_ERROR when the change could not be saved.
//   - GET_KVLIST_BY_NAMESPACE (219): ext namespace (required) → SUCCESS with a KVTable
//     body {"table":{"key":"value",…}}, or QUERY_NOT_FOUND "No config item,
//     Namespace: N" for a namespace without entries.
// A missing required field → SYSTEM_ERROR. A put in FERRY_DRAINED_BROKERS drains the
// key's broker group (the value stored is the time of the drain, whatever was sent)
// and a delete there undrains it (drain.go). See kvconfig.go for the file.

import (
	"context"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// handlePutKVConfig serves PUT_KV_CONFIG.
func (s *Server) handlePutKVConfig(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var hdr protocol.PutKVConfigRequestHeader
	if err := hdr.DecodeExt(req.ExtFields); err != nil {
		return nil, systemError("put kv config: " + err.Error())
	}
	var err error
	if hdr.Namespace == NamespaceDrainedBrokers {
		// The drain record is the drain: keep the table in step.
		s.drainMu.Lock()
		_, err = s.setDrained(hdr.Key, true)
		s.drainMu.Unlock()
	} else {
		err = s.kv.put(hdr.Namespace, hdr.Key, hdr.Value)
	}
	if err != nil {
		s.log.Error().Err(err).Str("namespace", hdr.Namespace).Str("key", hdr.Key).Msg("kv config not saved")
		return nil, systemError(err.Error())
	}
	s.log.Info().Str("namespace", hdr.Namespace).Str("key", hdr.Key).Str("value", hdr.Value).
		Str("remote", ch.RemoteAddr()).Msg("kv config put")
	return remoting.NewResponse(req, int16(protocol.Success), ""), nil
}

// handleGetKVConfig serves GET_KV_CONFIG.
func (s *Server) handleGetKVConfig(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var hdr protocol.GetKVConfigRequestHeader
	if err := hdr.DecodeExt(req.ExtFields); err != nil {
		return nil, systemError("get kv config: " + err.Error())
	}
	v, ok := s.kv.get(hdr.Namespace, hdr.Key)
	if !ok {
		return remoting.NewResponse(req, int16(protocol.QueryNotFound),
			"No config item, Namespace: "+hdr.Namespace+" Key: "+hdr.Key), nil
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	resp.ExtFields = protocol.NewExt(&protocol.GetKVConfigResponseHeader{Value: v})
	return resp, nil
}

// handleDeleteKVConfig serves DELETE_KV_CONFIG.
func (s *Server) handleDeleteKVConfig(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var hdr protocol.DeleteKVConfigRequestHeader
	if err := hdr.DecodeExt(req.ExtFields); err != nil {
		return nil, systemError("delete kv config: " + err.Error())
	}
	var err error
	if hdr.Namespace == NamespaceDrainedBrokers {
		s.drainMu.Lock()
		_, err = s.setDrained(hdr.Key, false)
		s.drainMu.Unlock()
	} else {
		_, err = s.kv.remove(hdr.Namespace, hdr.Key)
	}
	if err != nil {
		s.log.Error().Err(err).Str("namespace", hdr.Namespace).Str("key", hdr.Key).Msg("kv config deletion not saved")
		return nil, systemError(err.Error())
	}
	s.log.Info().Str("namespace", hdr.Namespace).Str("key", hdr.Key).Str("remote", ch.RemoteAddr()).Msg("kv config deleted")
	return remoting.NewResponse(req, int16(protocol.Success), ""), nil
}

// handleGetKVList serves GET_KVLIST_BY_NAMESPACE.
func (s *Server) handleGetKVList(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var hdr protocol.GetKVListByNamespaceRequestHeader
	if err := hdr.DecodeExt(req.ExtFields); err != nil {
		return nil, systemError("get kv list: " + err.Error())
	}
	table := s.kv.list(hdr.Namespace)
	if len(table) == 0 {
		return remoting.NewResponse(req, int16(protocol.QueryNotFound), "No config item, Namespace: "+hdr.Namespace), nil
	}
	body, err := protocol.EncodeKVTable(&protocol.KVTable{Table: table})
	if err != nil {
		return nil, systemError("encode kv table: " + err.Error())
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	resp.Body = body
	return resp, nil
}

// orderTopicConf returns the orderTopicConf of topic (ORDER_TOPIC_CONFIG), or "".
func (s *Server) orderTopicConf(topic string) string {
	v, _ := s.kv.get(NamespaceOrderTopicConfig, topic)
	return v
}

// orderTopicTable returns the ORDER_TOPIC_CONFIG namespace as a KVTable body, or nil
// when it has no entry (the body of a registration answer, as RocketMQ's).
func (s *Server) orderTopicTable() []byte {
	table := s.kv.list(NamespaceOrderTopicConfig)
	if len(table) == 0 {
		return nil
	}
	body, err := protocol.EncodeKVTable(&protocol.KVTable{Table: table})
	if err != nil {
		s.log.Error().Err(err).Msg("cannot encode the order topic config")
		return nil
	}
	return body
}
