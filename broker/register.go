package broker

import (
	"context"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// registerTimeout bounds one registration round trip.
const registerTimeout = 6 * time.Second

// registrar keeps the name servers informed: REGISTER_BROKER with the full topic table at
// start, every interval and whenever the topics change; UNREGISTER_BROKER at shutdown.
type registrar struct {
	topics   TopicTable
	nsrv     *remoting.Client
	addrs    []string
	interval time.Duration
	header   protocol.RegisterBrokerRequestHeader
	kick     <-chan struct{}
	log      zerolog.Logger
	creds    acl.Credentials // signs the requests (name servers with ACL on)
	// onResult receives every successful registration's answer (a slave learns its
	// master's HA address from it); nil: ignored.
	onResult func(protocol.RegisterBrokerResponseHeader)
	// onMaster receives, after each round in which a name server answered, the master
	// broker address of the first answer naming one ("" when none did): a slave's
	// metadata sync follows it. nil: ignored.
	onMaster func(addr string)
}

// newRegistrar returns a registrar for the name servers at addrs.
// A send on kick (buffered, by the topic table's change hook) makes it register at once.
func newRegistrar(o *Options, topics TopicTable, nsrv *remoting.Client, kick chan struct{}, log zerolog.Logger) *registrar {
	return &registrar{
		topics: topics, nsrv: nsrv, addrs: o.NamesrvAddrs, interval: o.RegisterInterval, log: log,
		kick: kick, creds: o.Credentials,
		header: protocol.RegisterBrokerRequestHeader{
			BrokerName: o.BrokerName, BrokerAddr: o.AdvertisedAddr, ClusterName: o.ClusterName,
			HAServerAddr: o.HAAddr, BrokerID: o.BrokerID,
		},
	}
}

// run registers at once, then every interval and on every kick, until ctx ends.
func (r *registrar) run(ctx context.Context) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	r.registerAll(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
		}
		r.registerAll(ctx)
	}
}

// registerAll sends REGISTER_BROKER with the full topic table to every name server.
func (r *registrar) registerAll(ctx context.Context) {
	if len(r.addrs) == 0 {
		return
	}
	body, err := protocol.EncodeRegisterBrokerBody(&protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: r.topics.All()})
	if err != nil {
		r.log.Error().Err(err).Msg("encoding the registration body")
		return
	}
	answered, master := false, ""
	defer func() {
		if answered && r.onMaster != nil {
			r.onMaster(master)
		}
	}()
	for _, ns := range r.addrs {
		rctx, cancel := context.WithTimeout(ctx, registerTimeout)
		req := protocol.NewRequest(protocol.RegisterBroker, &r.header)
		req.Body = body
		resp, err := r.nsrv.Invoke(rctx, ns, signed(r.creds, req))
		cancel()
		switch {
		case err != nil:
			r.log.Warn().Err(err).Str("namesrv", ns).Msg("registering with name server")
		case resp.Code != int16(protocol.Success):
			r.log.Warn().Int16("code", resp.Code).Str("remark", resp.Remark).Str("namesrv", ns).Msg("name server refused registration")
		default:
			var rh protocol.RegisterBrokerResponseHeader
			if err := rh.DecodeExt(resp.ExtFields); err != nil {
				r.log.Warn().Err(err).Str("namesrv", ns).Msg("decoding the registration answer")
				continue
			}
			answered = true
			if master == "" {
				master = rh.MasterAddr
			}
			if r.onResult != nil {
				r.onResult(rh)
			}
		}
	}
}

// unregisterAll sends UNREGISTER_BROKER to every name server (shutdown).
func (r *registrar) unregisterAll(ctx context.Context) {
	h := protocol.UnregisterBrokerRequestHeader{BrokerName: r.header.BrokerName, BrokerAddr: r.header.BrokerAddr,
		ClusterName: r.header.ClusterName, BrokerID: r.header.BrokerID}
	for _, ns := range r.addrs {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := r.nsrv.Invoke(rctx, ns, signed(r.creds, protocol.NewRequest(protocol.UnregisterBroker, &h)))
		cancel()
		if err != nil {
			r.log.Debug().Err(err).Str("namesrv", ns).Msg("unregistering from name server")
		}
	}
}
