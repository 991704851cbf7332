package nameserver

// Broker registration: REGISTER_BROKER (103) and UNREGISTER_BROKER (104).
//
// REGISTER_BROKER: ext brokerName, brokerAddr, clusterName, haServerAddr,
// brokerId (required), heartbeatTimeoutMillis, enableActingMaster,
// compressed, bodyCrc32, __ZONE_NAME; body = RegisterBrokerBody JSON.
//   - bodyCrc32 ≠ 0 and ≠ the masked CRC-32 of the body → SYSTEM_ERROR
//     "crc32 not match" (as Java).
//   - compressed=true → SYSTEM_ERROR: Java's compressed body is not read.
//   - missing/bad header field, malformed body, unusable address →
//     SYSTEM_ERROR with the reason.
//   - a registration that would rebind another registration's broker name and
//     id, or address (RouteTable, ErrTakeover) → SYSTEM_ERROR with the reason.
//   - ferryMasterEpoch (Ferry's, controller mode): a higher epoch takes over
//     bindings of lower ones; a lower epoch than a binding it meets →
//     SYSTEM_ERROR with the reason and ext ferryMasterEpoch, the higher epoch
//     (RouteTable, ErrStaleEpoch). A SUCCESS answer carries ferryMasterEpoch of
//     the group's master when it registered one.
//   - otherwise SUCCESS with ext masterAddr and haServerAddr for a slave whose
//     master is alive, and as body the KV namespace ORDER_TOPIC_CONFIG as a
//     KVTable when it has entries (Java brokers read it), else none.
//
// UNREGISTER_BROKER: ext brokerName, brokerAddr, clusterName, brokerId
// (required) → SUCCESS, also when nothing matched; SYSTEM_ERROR when another
// open connection holds the registration (ErrTakeover). Without admin
// credentials it keeps the binding reserved until it expires.

import (
	"context"
	"errors"
	"hash/crc32"
	"net/netip"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// RemarkCRCMismatch is the remark of the SYSTEM_ERROR answering a
// registration whose bodyCrc32 does not match its body (Java's text).
const RemarkCRCMismatch = "crc32 not match"

// RemarkCompressedUnsupported is the remark of the SYSTEM_ERROR answering a
// registration with a compressed body.
const RemarkCompressedUnsupported = "compressed REGISTER_BROKER bodies are not supported by this name server; " +
	"set compressedRegister=false on the broker"

// bodyCRC is the masked CRC-32 RocketMQ puts in bodyCrc32: IEEE CRC-32 with
// the sign bit cleared.
func bodyCRC(body []byte) int32 {
	return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF)
}

// systemError answers SYSTEM_ERROR with a remark.
func systemError(remark string) error {
	return &remoting.CodeError{Code: int16(protocol.SystemError), Remark: remark}
}

// registerCommand decodes and applies one REGISTER_BROKER request to t and
// builds its response. It is the whole registration path short of logging,
// shared by the handler and the fuzz test.
func registerCommand(t *RouteTable, req *remoting.Command, from Registrant, now time.Time) (
	*remoting.Command, *protocol.RegisterBrokerRequestHeader, RegisterResult, error) {
	var hdr protocol.RegisterBrokerRequestHeader
	if err := hdr.DecodeExt(req.ExtFields); err != nil {
		return nil, nil, RegisterResult{}, systemError("register broker: " + err.Error())
	}
	if hdr.BodyCrc32 != 0 && hdr.BodyCrc32 != bodyCRC(req.Body) {
		return nil, &hdr, RegisterResult{}, systemError(RemarkCRCMismatch)
	}
	if hdr.Compressed {
		return nil, &hdr, RegisterResult{}, systemError(RemarkCompressedUnsupported)
	}
	var body *protocol.RegisterBrokerBody
	if len(req.Body) > 0 {
		var err error
		if body, err = protocol.DecodeRegisterBrokerBody(req.Body); err != nil {
			return nil, &hdr, RegisterResult{}, systemError("register broker: " + err.Error())
		}
	}
	res, err := t.RegisterBroker(&hdr, body, from, now)
	if err != nil {
		// A stale epoch's refusal keeps the epoch that refused it (the handler answers it).
		return nil, &hdr, RegisterResult{MasterEpoch: res.MasterEpoch}, systemError(err.Error())
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	rh := protocol.RegisterBrokerResponseHeader{MasterAddr: res.MasterAddr, HAServerAddr: res.HAServerAddr,
		MasterEpoch: res.MasterEpoch}
	if ext := protocol.NewExt(&rh); len(ext) > 0 {
		resp.ExtFields = ext
	}
	return resp, &hdr, res, nil
}

// handleRegisterBroker serves REGISTER_BROKER.
func (s *Server) handleRegisterBroker(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	resp, hdr, res, err := registerCommand(s.table, req, s.registrant(ch), s.opts.Clock())
	if err != nil {
		ev := s.log.Warn().Err(err).Str("remote", ch.RemoteAddr())
		if hdr != nil {
			ev = ev.Str("brokerName", hdr.BrokerName).Str("brokerAddr", hdr.BrokerAddr)
		}
		ev.Msg("broker registration refused")
		if res.MasterEpoch > 0 {
			// Refused for a stale epoch: the broker learns the newer one (ferryMasterEpoch).
			var ce *remoting.CodeError
			if errors.As(err, &ce) {
				resp := remoting.NewResponse(req, ce.Code, ce.Remark)
				resp.ExtFields = protocol.NewExt(&protocol.RegisterBrokerResponseHeader{MasterEpoch: res.MasterEpoch})
				return resp, nil
			}
		}
		return nil, err
	}
	ev := s.log.Debug()
	if res.Changed() {
		ev = s.log.Info()
	}
	if ev.Enabled() {
		ev.Str("cluster", hdr.ClusterName).Str("brokerName", hdr.BrokerName).Int64("brokerId", hdr.BrokerID).
			Str("brokerAddr", hdr.BrokerAddr).Str("remote", ch.RemoteAddr()).
			Bool("newAddress", res.NewAddress).Bool("topicsUpdated", res.TopicsUpdated).
			Int64("dataVersion", res.DataVersion.Counter).
			Strs("removedTopics", res.RemovedTopics).Str("displaced", res.Displaced).
			Bool("shared", res.Shared).Bool("reclaimed", res.Reclaimed).
			Str("masterAddr", res.MasterAddr).Int32("masterEpoch", hdr.MasterEpoch).Bool("epochTakeover", res.EpochTakeover).
			Msg("broker registered")
	}
	if !s.channelOpen(ch.ID()) {
		// The connection closed while the registration was being handled and
		// its close callback may already have run: do its work again.
		s.onClose(ch)
	}
	resp.Body = s.orderTopicTable()
	return resp, nil
}

// handleUnregisterBroker serves UNREGISTER_BROKER.
func (s *Server) handleUnregisterBroker(_ context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var hdr protocol.UnregisterBrokerRequestHeader
	if err := hdr.DecodeExt(req.ExtFields); err != nil {
		return nil, systemError("unregister broker: " + err.Error())
	}
	removed, err := s.table.UnregisterBroker(hdr.ClusterName, hdr.BrokerAddr, hdr.BrokerName, hdr.BrokerID,
		s.registrant(ch), s.opts.Clock())
	if err != nil {
		s.log.Warn().Err(err).Str("remote", ch.RemoteAddr()).Msg("broker unregistration refused")
		return nil, systemError(err.Error())
	}
	ev := s.log.Debug()
	if removed {
		ev = s.log.Info()
	}
	ev.Str("cluster", hdr.ClusterName).Str("brokerName", hdr.BrokerName).Int64("brokerId", hdr.BrokerID).
		Str("brokerAddr", hdr.BrokerAddr).Str("remote", ch.RemoteAddr()).Bool("removed", removed).
		Msg("broker unregistered")
	return remoting.NewResponse(req, int16(protocol.Success), ""), nil
}

// registrant describes the connection a registration arrives on.
func (s *Server) registrant(ch remoting.Channel) Registrant {
	// With access control on, a registration reaches its handler only with admin
	// credentials: it is trusted.
	r := Registrant{ChannelID: ch.ID(), Trusted: s.opts.ACL != nil}
	if ap, err := netip.ParseAddrPort(ch.RemoteAddr()); err == nil {
		r.IP = ap.Addr().Unmap()
	}
	return r
}
