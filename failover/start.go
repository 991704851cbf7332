package failover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/ha"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/schedule"
	"github.com/ferrymq/ferry/store"
)

// relistenPause is the pause between two attempts to listen on the broker port again.
const relistenPause = 20 * time.Millisecond

// start builds the broker for role r and serves it on the broker port.
func (a *Agent) start(r role) (*instance, error) {
	if r.master {
		return a.startMaster(r)
	}
	return a.startSlave(r)
}

// startMaster opens the broker as r's master and, before it serves anything, records the
// new epoch in the epoch file: from the log's current end on, the log is this epoch's.
func (a *Agent) startMaster(r role) (*instance, error) {
	b, err := broker.New(a.brokerOptions(r))
	if err != nil {
		return nil, err
	}
	end := b.Store().CommitLog().MaxOffset()
	last, ok := a.epochs.Last()
	switch {
	case ok && last.Epoch > r.epoch:
		// The history already holds a newer epoch (adopted from a newer master): the
		// state this assignment came from is stale; the next heartbeat brings the newer.
		return nil, errors.Join(fmt.Errorf("%w: elected master for epoch %d, but the epoch file holds epoch %d",
			errNotYet, r.epoch, last.Epoch), a.discard(b))
	case !ok || last.Epoch < r.epoch:
		if err := a.epochs.Append(ha.EpochEntry{Epoch: r.epoch, StartOffset: end}); err != nil {
			return nil, errors.Join(fmt.Errorf("failover: %w", err), a.discard(b))
		}
		a.log.Info().Int32("epoch", r.epoch).Int64("startOffset", end).Msg("new master epoch recorded")
	}
	return a.serve(b, r)
}

// startSlave asks the master for its epoch history, cuts the local log back to where it
// agrees with the master's (when it is longer), adopts the master's history and serves
// as its slave.
func (a *Agent) startSlave(r role) (*instance, error) {
	ctx, cancel := context.WithTimeout(a.ctx, a.opts.Controller.Timeout)
	hist, masterEnd, err := a.masterHistory(ctx, r.masterAddr)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNotYet, err)
	}
	if n := len(hist); n == 0 || hist[n-1].Epoch != r.epoch {
		newest := int32(0)
		if n > 0 {
			newest = hist[n-1].Epoch
		}
		return nil, fmt.Errorf("%w: master %s serves epoch %d, elected for %d", errNotYet, r.masterAddr, newest, r.epoch)
	}
	o := a.brokerOptions(r)
	b, err := broker.New(o)
	if err != nil {
		return nil, err
	}
	end, start := b.Store().CommitLog().MaxOffset(), b.Store().CommitLog().MinOffset()
	// Nothing before the log's first retained byte can be cut: a log that agrees with the
	// master nowhere (no common epoch: a store from before controller mode) is emptied.
	if point := max(ha.ConsistentPoint(a.epochs.Entries(), end, hist, masterEnd), start); point < end {
		// The log holds writes the master does not have (an old master's, or what a
		// slave copied from one): they are not part of the group's history.
		if err := a.discard(b); err != nil {
			return nil, err
		}
		so, err := storeOptions(&o)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := store.Truncate(so, point); err != nil {
			return nil, fmt.Errorf("failover: truncate the log to %d: %w", point, err)
		}
		a.setLastEnd(point)
		a.log.Warn().Int64("from", end).Int64("to", point).Int64("dropped", end-point).
			Interface("localEpochs", a.epochs.Entries()).Interface("masterEpochs", hist).
			Dur("took", time.Since(t0)).Msg("log truncated to where it agrees with the master's")
		if b, err = broker.New(o); err != nil {
			return nil, err
		}
	}
	if err := a.epochs.Replace(hist); err != nil {
		return nil, errors.Join(fmt.Errorf("failover: %w", err), a.discard(b))
	}
	return a.serve(b, r)
}

// errNotYet: the group's state has not settled for this role yet — a slave's master does
// not serve the epoch it was elected for (it is still starting), or the assignment is
// older than what the broker knows. The agent tries again shortly; it is not a failure.
var errNotYet = errors.New("failover: the group is not ready for this role yet")

// serve starts b on the broker port.
func (a *Agent) serve(b *broker.Broker, r role) (*instance, error) {
	ln, err := a.listener()
	if err != nil {
		return nil, errors.Join(err, a.discard(b))
	}
	if err := b.Start(ln); err != nil {
		return nil, errors.Join(err, ignoreClosed(ln.Close()), a.discard(b))
	}
	return &instance{b: b, role: r, since: time.Now()}, nil
}

// discard shuts down a broker that was opened but will not serve.
func (a *Agent) discard(b *broker.Broker) error {
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.ShutdownTimeout)
	defer cancel()
	err := b.Shutdown(ctx)
	a.setLastEnd(b.Store().CommitLog().MaxOffset())
	return err
}

// listener returns the listener the next broker serves: the one the agent was given,
// until a broker took it, then a new one on the same address (waiting up to
// RelistenTimeout for the port to be free).
func (a *Agent) listener() (net.Listener, error) {
	if ln := a.ln; ln != nil {
		a.ln = nil
		return ln, nil
	}
	deadline := time.Now().Add(a.opts.RelistenTimeout)
	for {
		ln, err := net.Listen("tcp", a.addr)
		if err == nil {
			return ln, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("failover: listen on the broker port %s again: %w", a.addr, err)
		}
		select {
		case <-a.ctx.Done():
			return nil, fmt.Errorf("failover: listen on the broker port %s again: %w", a.addr, a.ctx.Err())
		case <-time.After(relistenPause):
		}
	}
}

// brokerOptions are the configured broker's options with what the controllers decided
// for role r.
func (a *Agent) brokerOptions(r role) broker.Options {
	o := a.opts.Broker
	id := a.BrokerID()
	o.ControllerMode, o.AssignedID, o.MasterEpoch = true, id, r.epoch
	o.Epochs, o.OnFenced = a.epochs, a.fenced
	if r.master {
		// A SYNC_MASTER: with allAckInSyncStateSet a send that waits for storage waits
		// for every member of the SyncStateSet, without it for any one slave, as in fixed
		// roles (broker.Options.AllAckInSyncStateSet).
		o.Role, o.BrokerID, o.HAMasterAddr = broker.RoleSyncMaster, 0, ""
		o.SyncStateSet = &keeper{a: a, masterEpoch: r.epoch}
	} else {
		o.Role, o.BrokerID, o.HAMasterAddr, o.SyncStateSet = broker.RoleSlave, id, r.masterHA, nil
	}
	return o
}

// logEnd opens the store just long enough to learn where its commit log ends (recovering
// it first, after a crash, as the broker's own open would; the broker's open after that
// is quick).
func (a *Agent) logEnd() (int64, error) {
	so, err := storeOptions(&a.opts.Broker)
	if err != nil {
		return 0, err
	}
	s, err := store.Open(so)
	if err != nil {
		return 0, fmt.Errorf("failover: open the store to find where its log ends: %w", err)
	}
	end := s.CommitLog().MaxOffset()
	if err := s.Shutdown(context.Background()); err != nil {
		return 0, fmt.Errorf("failover: %w", err)
	}
	return end, nil
}

// storeOptions are the store's options as the broker opens them (its store host and the
// schedule's tags codes: a recovery re-dispatches records), for opening the store while
// no broker runs.
func storeOptions(o *broker.Options) (store.Options, error) {
	so := o.Store
	host, err := netip.ParseAddrPort(o.AdvertisedAddr)
	if err != nil {
		return so, fmt.Errorf("failover: advertised address: %w", err)
	}
	so.StoreHost, so.TagsCode = host, schedule.TagsCoder(o.DelayLevels)
	return so, nil
}

// masterHistory asks the broker at addr for its epoch history and log end
// (GET_BROKER_EPOCH_CACHE), signed with the broker's credentials when it has some.
func (a *Agent) masterHistory(ctx context.Context, addr string) ([]ha.EpochEntry, int64, error) {
	req := remoting.NewRequest(int16(protocol.GetBrokerEpochCache), nil)
	if c := a.opts.Broker.Credentials; c.AccessKey != "" {
		req.ExtFields = remoting.Ext(c.SignFields(req.ExtFields, req.Body))
	}
	resp, err := a.peers.Invoke(ctx, addr, req)
	if err != nil {
		return nil, 0, fmt.Errorf("failover: epoch history of %s: %w", addr, err)
	}
	if resp.Code != int16(protocol.Success) {
		return nil, 0, fmt.Errorf("failover: epoch history of %s: code %d: %s", addr, resp.Code, resp.Remark)
	}
	c, err := protocol.DecodeBrokerEpochCache(resp.Body)
	if err != nil {
		return nil, 0, fmt.Errorf("failover: epoch history of %s: %w", addr, err)
	}
	hist := make([]ha.EpochEntry, len(c.EpochList))
	for i, e := range c.EpochList {
		hist[i] = ha.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset}
	}
	return hist, c.MaxOffset, nil
}

// reportedHAAddr is the HA address a broker reports before it serves as a master (slaves
// connect there once it is elected): HAAddr, else HAListen, else the advertised port + 1,
// with the advertised host when the address names none or all interfaces. "" when the
// port is 0 (any free port): the master reports the port it bound once it serves.
func reportedHAAddr(o *broker.Options) string {
	addr := o.HAAddr
	if addr == "" {
		addr = o.HAListen
	}
	advHost, advPort, err := net.SplitHostPort(o.AdvertisedAddr)
	if err != nil {
		return ""
	}
	if addr == "" {
		p, err := strconv.Atoi(advPort)
		if err != nil || p >= 65535 {
			return ""
		}
		addr = net.JoinHostPort(advHost, strconv.Itoa(p+1))
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "0" {
		return ""
	}
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		host = advHost
	}
	return net.JoinHostPort(host, port)
}
