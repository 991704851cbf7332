package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl/sign"
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
	header   protocol.RegisterBrokerRequestHeader // HAServerAddr aside, which calls.haAddr gives
	kick     <-chan struct{}
	log      zerolog.Logger
	creds    sign.Credentials // signs the requests (name servers with ACL on)
	calls    registrarCalls
	opts     *Options // controller mode: OnFenced
	// accepted is whether the latest round had at least one name server accept the
	// registration (Broker.Readiness).
	accepted atomic.Bool
}

// registrarCalls are what the registrar asks of and tells the rest of the broker, given
// at construction.
type registrarCalls struct {
	// haAddr is the replication address to register, read at every round (a master's
	// bound HA listener once started).
	haAddr func() string
	// onResult receives every successful registration's answer (a slave learns its
	// master's HA address from it); nil: ignored.
	onResult func(protocol.RegisterBrokerResponseHeader)
	// onMaster receives, after each round in which a name server answered, the master
	// broker address of the first answer naming one ("" when none did): a slave's
	// metadata sync follows it. nil: ignored.
	onMaster func(addr string)
}

// newRegistrar returns a registrar for the name servers o names. A send on kick
// (buffered, by the topic table's change hook) makes it register at once.
func newRegistrar(o *Options, topics TopicTable, nsrv *remoting.Client, kick <-chan struct{}, calls registrarCalls,
	log zerolog.Logger) *registrar {
	return &registrar{
		topics: topics, nsrv: nsrv, addrs: o.NamesrvAddrs, interval: o.RegisterInterval, log: log,
		kick: kick, creds: o.Credentials, calls: calls, opts: o,
		header: protocol.RegisterBrokerRequestHeader{
			BrokerName: o.BrokerName, BrokerAddr: o.AdvertisedAddr, ClusterName: o.ClusterName,
			BrokerID: o.BrokerID, MasterEpoch: o.MasterEpoch,
		},
	}
}

// firstRetry is the wait before registering again after a round in which a name server
// did not accept the registration; it doubles per failed round up to the interval, so a
// topic created while a name server was briefly unreachable is routed within about a
// second of it coming back, not a whole interval later.
const firstRetry = 200 * time.Millisecond

// run registers at once, then every interval, on every kick and, after a failed round,
// on a backoff, until ctx ends.
func (r *registrar) run(ctx context.Context) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	var (
		backoff time.Duration
		retry   <-chan time.Time
	)
	for {
		if r.registerAll(ctx) {
			backoff, retry = 0, nil
		} else {
			backoff = nextRetry(backoff, r.interval)
			retry = time.After(backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.kick:
		case <-retry:
		}
	}
}

// nextRetry is the backoff after prev: firstRetry, then doubling, never above limit.
func nextRetry(prev, limit time.Duration) time.Duration {
	next := max(prev*2, firstRetry)
	return min(next, limit)
}

// registerNow is registerAll without the outcome, for handlers that register on demand.
func (r *registrar) registerNow(ctx context.Context) { r.registerAll(ctx) }

// registerAll sends REGISTER_BROKER with the full topic table to every name server and
// reports whether every one of them accepted it.
func (r *registrar) registerAll(ctx context.Context) bool {
	if len(r.addrs) == 0 {
		return true
	}
	body, err := protocol.EncodeRegisterBrokerBody(&protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: r.topics.All()})
	if err != nil {
		r.log.Error().Err(err).Msg("encoding the registration body")
		return false
	}
	h := r.header
	h.HAServerAddr = r.calls.haAddr()
	ok := true
	answered, master := false, ""
	defer func() {
		r.accepted.Store(answered)
		if answered && r.calls.onMaster != nil {
			r.calls.onMaster(master)
		}
	}()
	for _, ns := range r.addrs {
		rctx, cancel := context.WithTimeout(ctx, registerTimeout)
		req := protocol.NewRequest(protocol.RegisterBroker, &h)
		req.Body = body
		resp, err := r.nsrv.Invoke(rctx, ns, signed(r.creds, req))
		cancel()
		switch {
		case err != nil:
			ok = false
			r.log.Warn().Err(err).Str("namesrv", ns).Msg("registering with name server")
		case resp.Code != int16(protocol.Success):
			ok = false
			r.log.Warn().Int16("code", resp.Code).Str("remark", resp.Remark).Str("namesrv", ns).Msg("name server refused registration")
			var rh protocol.RegisterBrokerResponseHeader
			if rh.DecodeExt(resp.ExtFields) == nil {
				r.checkEpoch(ns, rh.MasterEpoch, resp.Remark)
			}
		default:
			var rh protocol.RegisterBrokerResponseHeader
			if err := rh.DecodeExt(resp.ExtFields); err != nil {
				ok = false
				r.log.Warn().Err(err).Str("namesrv", ns).Msg("decoding the registration answer")
				continue
			}
			r.checkEpoch(ns, rh.MasterEpoch, "")
			answered = true
			if master == "" {
				master = rh.MasterAddr
			}
			if r.calls.onResult != nil {
				r.calls.onResult(rh)
			}
		}
	}
	return ok
}

// checkEpoch fences a controller-mode broker that a name server showed a master epoch
// higher than its own (in an answer, or in a refusal with remark).
func (r *registrar) checkEpoch(ns string, epoch int32, remark string) {
	if !r.opts.ControllerMode || epoch <= r.opts.MasterEpoch {
		return
	}
	err := fmt.Errorf("%w: name server %s knows master epoch %d of broker %s, this broker serves %d", ErrFenced, ns,
		epoch, r.opts.BrokerName, r.opts.MasterEpoch)
	if remark != "" {
		err = fmt.Errorf("%w (%s)", err, remark)
	}
	r.log.Warn().Err(err).Msg("this broker is stale")
	fence(r.opts, err)
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
