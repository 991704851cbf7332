package nameserver

// Admin requests, sent by tools and the admin clients:
//   - GET_BROKER_CLUSTER_INFO (106): no ext → SUCCESS + ClusterInfo JSON
//     {"brokerAddrTable":{…},"clusterAddrTable":{…}}.
//   - GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): no ext → SUCCESS +
//     {"topicList":[…]} (sorted). The Go admin decodes the body without
//     looking at the code, so this request always carries a valid body.
//   - DELETE_TOPIC_IN_NAMESRV (216): ext topic (required), clusterName
//     (optional: only that cluster's broker groups) → SUCCESS, also when the
//     topic was unknown.

import (
	"context"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Ext keys of DELETE_TOPIC_IN_NAMESRV (package protocol has no typed header
// for it).
const (
	extTopic       = "topic"
	extClusterName = "clusterName"
)

// handleGetClusterInfo serves GET_BROKER_CLUSTER_INFO.
func (s *Server) handleGetClusterInfo(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	info := s.table.ClusterInfo()
	body, err := protocol.EncodeClusterInfo(&info)
	if err != nil {
		s.log.Error().Err(err).Msg("cannot encode cluster info")
		return nil, systemError("encode cluster info: " + err.Error())
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	resp.Body = body
	return resp, nil
}

// handleGetAllTopicList serves GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
func (s *Server) handleGetAllTopicList(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	body, err := protocol.EncodeTopicList(&protocol.TopicList{TopicList: s.table.TopicList()})
	if err != nil {
		return nil, systemError("encode topic list: " + err.Error())
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	resp.Body = body
	return resp, nil
}

// handleDeleteTopic serves DELETE_TOPIC_IN_NAMESRV.
func (s *Server) handleDeleteTopic(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	topic := req.Ext(extTopic)
	if topic == "" {
		return nil, systemError("delete topic: missing required ext field \"topic\"")
	}
	cluster := req.Ext(extClusterName)
	removed := s.table.DeleteTopic(topic, cluster)
	ev := s.log.Debug()
	if removed {
		ev = s.log.Info()
	}
	ev.Str("topic", topic).Str("cluster", cluster).Str("remote", ch.RemoteAddr()).Bool("removed", removed).
		Msg("topic route deleted")
	return remoting.NewResponse(req, int16(protocol.Success), ""), nil
}
