package nameserver

// GET_ROUTEINFO_BY_TOPIC (105): ext topic (required; Java 5.x may add
// acceptStandardJsonOnly, irrelevant because the answer is always standard
// JSON).
//   - SUCCESS + TopicRouteData JSON (compact, quoted brokerAddrs keys, only
//     the broker groups hosting the topic, drained groups without the write
//     bit, orderTopicConf from the KV namespace ORDER_TOPIC_CONFIG when it has
//     the topic) when the topic has queue data of a registered broker group;
//   - TOPIC_NOT_EXIST (17) with a remark otherwise (the Go producer then
//     falls back to the TBW102 route);
//   - SYSTEM_ERROR when the topic field is missing.

import (
	"context"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// handleGetRouteInfo serves GET_ROUTEINFO_BY_TOPIC.
func (s *Server) handleGetRouteInfo(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var hdr protocol.GetRouteInfoRequestHeader
	if err := hdr.DecodeExt(req.ExtFields); err != nil {
		return nil, systemError("get route info: " + err.Error())
	}
	route, ok := s.table.TopicRoute(hdr.Topic)
	if !ok {
		return remoting.NewResponse(req, int16(protocol.TopicNotExist),
			"No topic route info in name server for the topic: "+hdr.Topic), nil
	}
	route.OrderTopicConf = s.orderTopicConf(hdr.Topic)
	body, err := protocol.EncodeTopicRouteData(&route)
	if err != nil {
		// Addresses are checked at registration, so this means a bug.
		s.log.Error().Err(err).Str("topic", hdr.Topic).Msg("cannot encode route")
		return nil, systemError("encode route: " + err.Error())
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	resp.Body = body
	return resp, nil
}
