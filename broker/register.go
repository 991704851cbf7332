package broker

import (
	"context"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// registerTimeout bounds one registration round trip.
const registerTimeout = 6 * time.Second

// kickRegister asks the registration loop to register now (topics changed).
func (b *Broker) kickRegister() {
	select {
	case b.register <- struct{}{}:
	default:
	}
}

// registerLoop registers with every name server at start, every RegisterInterval, and
// whenever the topics change.
func (b *Broker) registerLoop() {
	t := time.NewTicker(b.cfg.RegisterInterval)
	defer t.Stop()
	ctx := b.ctx
	b.registerAll(ctx)
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		case <-b.register:
		}
		b.registerAll(ctx)
	}
}

// registerAll sends REGISTER_BROKER with the full topic table to every name server.
func (b *Broker) registerAll(ctx context.Context) {
	if b.nsrv == nil {
		return
	}
	body, err := protocol.EncodeRegisterBrokerBody(&protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: b.topics.All()})
	if err != nil {
		b.log.Error().Err(err).Msg("encoding the registration body")
		return
	}
	h := protocol.RegisterBrokerRequestHeader{
		BrokerName: b.cfg.BrokerName, BrokerAddr: b.addr, ClusterName: b.cfg.ClusterName,
		HAServerAddr: b.cfg.EffectiveHAListen(), BrokerID: int64(b.cfg.BrokerID),
	}
	for _, ns := range b.cfg.NamesrvAddrs {
		rctx, cancel := context.WithTimeout(ctx, registerTimeout)
		req := remoting.NewRequest(int16(protocol.RegisterBroker), protocol.NewExt(&h))
		req.Body = body
		resp, err := b.nsrv.Invoke(rctx, ns, req)
		cancel()
		switch {
		case err != nil:
			b.log.Warn().Err(err).Str("namesrv", ns).Msg("registering with name server")
		case resp.Code != int16(protocol.Success):
			b.log.Warn().Int16("code", resp.Code).Str("remark", resp.Remark).Str("namesrv", ns).Msg("name server refused registration")
		}
	}
}

// unregisterAll sends UNREGISTER_BROKER to every name server (shutdown).
func (b *Broker) unregisterAll(ctx context.Context) {
	h := protocol.UnregisterBrokerRequestHeader{BrokerName: b.cfg.BrokerName, BrokerAddr: b.addr,
		ClusterName: b.cfg.ClusterName, BrokerID: int64(b.cfg.BrokerID)}
	for _, ns := range b.cfg.NamesrvAddrs {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := b.nsrv.Invoke(rctx, ns, remoting.NewRequest(int16(protocol.UnregisterBroker), protocol.NewExt(&h)))
		cancel()
		if err != nil {
			b.log.Debug().Err(err).Str("namesrv", ns).Msg("unregistering from name server")
		}
	}
}
