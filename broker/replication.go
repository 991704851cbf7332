package broker

// Master–slave replication wiring (package ha; spec storage-and-broker.md §7).
//
// A master (ASYNC_MASTER or SYNC_MASTER) runs an ha.Master on its HA listener and kicks
// its writers after every send. A SYNC_MASTER send that waits for storage (WAIT=true)
// is then answered as RocketMQ 4.x does (§7.3): SLAVE_NOT_AVAILABLE at once when no
// slave is connected or the best slave is HASlaveFallbehindMax or more behind the
// message's end; otherwise it waits up to HASlaveTimeout for a slave's acknowledgement
// of that end and answers FLUSH_SLAVE_TIMEOUT when none comes — or SLAVE_NOT_AVAILABLE
// as soon as the last slave disconnects during the wait (RocketMQ waits out the timeout;
// a client whose send timeout is shorter then resends a message that is stored). The
// message stays stored in every case. The wait comes after the sync flush (§7.4): a flush timeout is kept
// when the slave acknowledges, a slave failure replaces it.
//
// Security (docs/security.md, Replication): with ACL on, the master's HA listener admits
// only slaves that prove an admin account of its accounts file in a hello (ha/frame.go),
// and sends nothing to others; a slave proves Options.Credentials (broker.accessKey /
// secretKey, the account it registers with). The listener follows the broker port's TLS
// mode (Options.TLS); a slave dials TLS with Options.NamesrvTLS (broker.tlsToNamesrv),
// as it does its master's broker port for the metadata sync.
//
// A slave runs an ha.Slave appending into its store's commit log (its dispatcher builds
// the consume queues and index) towards HAMasterAddr, or towards the master HA address
// the name servers return to its REGISTER_BROKER (haServerAddr), switching when that
// address changes. A slave starts neither the schedule nor the transaction service and
// refuses writes (the write column of registerHandlers). It copies the master's metadata with
// slaveSync (slavesync.go).
//
// Controller mode (controller.go): the master's HA listener admits only slaves of its
// master epoch and reports a slave of a newer one (OnFenced); a slave identifies itself
// with its id and epoch and replicates from the static HAMasterAddr. A master's send that
// waits is answered by afterPutInSet: SLAVE_NOT_AVAILABLE below MinInSyncReplicas, and
// with AllAckInSyncStateSet a wait for every member of the SyncStateSet (syncstate.go).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/ha"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// replication is the broker's side of HA: the master or the slave, by role.
//
// Lock order: mu only; ha.Slave.Close is called under it (the slave's goroutines never
// take it).
type replication struct {
	role         Role
	log          zerolog.Logger
	cl           ha.Log // the store's commit log, as replication sees it
	timeout      time.Duration
	fallbehind   int64
	staticMaster string
	brokerName   string
	auth         ha.Authenticator    // a master's, with ACL on: slaves prove an admin account
	tls          *remoting.TLSConfig // a master's HA listener follows the broker port's mode
	creds        sign.Credentials    // a slave's, proved to its master
	dialTLS      *tls.Config         // a slave's, dialing its master (NamesrvTLS)

	opts *Options // the HA listener's addresses (haListenAddr, haRegisterAddr), controller mode
	// sync is a controller-mode master's SyncStateSet (syncstate.go); nil otherwise.
	sync *syncState
	// Set by start before the server serves and the registrar runs:
	master     *ha.Master        // a master's
	registered string            // the HA address to register: Options.HAAddr, a master's bound listener once started
	props      map[string]string // a master's GET_BROKER_CONFIG keys: haServerAddr, haListenPort

	mu struct {
		sync.Mutex
		slave      *ha.Slave
		masterAddr string // the HA address the slave replicates from
		closed     bool
	}
}

func newReplication(o *Options, cl ha.Log, log zerolog.Logger) *replication {
	r := &replication{role: o.Role, cl: cl, log: log, timeout: o.HASlaveTimeout,
		fallbehind: o.HASlaveFallbehindMax, staticMaster: o.HAMasterAddr, brokerName: o.BrokerName,
		tls: o.TLS, creds: o.Credentials, dialTLS: o.NamesrvTLS, opts: o, registered: o.HAAddr}
	if o.ControllerMode && o.Role != RoleSlave {
		r.sync = newSyncState(o, cl, log)
	}
	if o.ACL != nil {
		if a, ok := o.ACL.(ha.Authenticator); ok {
			r.auth = a
		} else {
			r.auth = refuseReplication{} // a checker that cannot judge slaves admits none
		}
	}
	return r
}

// refuseReplication refuses every slave.
type refuseReplication struct{}

func (refuseReplication) CheckReplication(netip.Addr, string, []byte, []byte) error {
	return fmt.Errorf("%w: this broker's ACL cannot check replication accounts", acl.ErrNoPermission)
}

// listenAddr is where a master's HA listener binds: HAListen, else HAAddr, else the
// advertised port + 1 (RocketMQ's haListenPort).
func haListenAddr(o *Options) (string, error) {
	if o.HAListen != "" {
		return o.HAListen, nil
	}
	if o.HAAddr != "" {
		return o.HAAddr, nil
	}
	host, port, err := net.SplitHostPort(o.AdvertisedAddr)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p >= 65535 {
		return "", fmt.Errorf("no HA port after advertised port %s: set HAListen", port)
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}

// haRegisterAddr is the HA address to register for a listener bound at bound: HAAddr
// unless it is empty or names port 0, else the bound address with AdvertisedAddr's host
// when the listener is on all interfaces.
func haRegisterAddr(o *Options, bound net.Addr) string {
	if host, port, err := net.SplitHostPort(o.HAAddr); err == nil && port != "0" && host != "" {
		return o.HAAddr
	}
	tcp, ok := bound.(*net.TCPAddr)
	if !ok {
		return bound.String()
	}
	if tcp.IP.IsUnspecified() {
		if host, _, err := net.SplitHostPort(o.AdvertisedAddr); err == nil {
			return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
		}
	}
	return tcp.String()
}

// start starts a master's HA listener (taking the address to register from it) or a
// slave's replication from a static master address; a slave without one starts on its
// first registration answer (learnMaster).
func (r *replication) start() error {
	if r.role == RoleSlave {
		return r.startSlave()
	}
	addr, err := haListenAddr(r.opts)
	if err != nil {
		return fmt.Errorf("HA listener: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("HA listener (slaves connect there; default the advertised port + 1): %w", err)
	}
	r.registered = haRegisterAddr(r.opts, ln.Addr())
	r.props = map[string]string{"haServerAddr": r.registered}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok {
		r.props["haListenPort"] = strconv.Itoa(tcp.Port)
	}
	return r.startMaster(ln)
}

// registeredAddr is the HA address registered with the name servers.
func (r *replication) registeredAddr() string { return r.registered }

// configProperties are the GET_BROKER_CONFIG keys known once started (a master's HA
// listener); nil before and on a slave. The caller does not modify the map.
func (r *replication) configProperties() map[string]string { return r.props }

// startMaster serves slaves on ln.
func (r *replication) startMaster(ln net.Listener) error {
	mo := ha.DefaultMasterOptions()
	mo.Log, mo.Listener, mo.Logger = r.cl, ln, r.log
	mo.Auth, mo.TLS, mo.BrokerName = r.auth, r.tls, r.brokerName
	if o := r.opts; o.ControllerMode {
		mo.Epoch = o.MasterEpoch
		mo.OnStaleEpoch = func(id int64, epoch int32) {
			fence(o, fmt.Errorf("%w: slave %d serves master epoch %d, this master %d", ErrFenced, id, epoch, o.MasterEpoch))
		}
	}
	m, err := ha.NewMaster(mo)
	if err != nil {
		_ = ln.Close()
		return err
	}
	r.master = m
	if r.sync != nil {
		r.sync.master = m
	}
	return nil
}

// startSlave replicates from the static master address, when one is configured.
func (r *replication) startSlave() error {
	if r.staticMaster == "" {
		return nil
	}
	return r.follow(r.staticMaster)
}

// learnMaster takes the master HA address from a REGISTER_BROKER answer (RocketMQ's
// updateHaMasterAddress): a slave without a static address (re)connects to it.
func (r *replication) learnMaster(h protocol.RegisterBrokerResponseHeader) {
	if r.role != RoleSlave || r.staticMaster != "" || h.HAServerAddr == "" {
		return
	}
	if err := r.follow(h.HAServerAddr); err != nil {
		r.log.Error().Err(err).Str("haServerAddr", h.HAServerAddr).Msg("cannot replicate from the master the name server named")
	}
}

// follow replicates from addr, replacing a slave that replicates from elsewhere.
func (r *replication) follow(addr string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed || addr == r.mu.masterAddr {
		return nil
	}
	if r.mu.slave != nil {
		_ = r.mu.slave.Close()
		r.mu.slave = nil
	}
	so := ha.DefaultSlaveOptions()
	so.Log, so.MasterAddr, so.Logger = r.cl, addr, r.log
	so.Credentials, so.BrokerName, so.TLS = r.creds, r.brokerName, r.dialTLS
	if o := r.opts; o.ControllerMode {
		so.BrokerID, so.Epoch = o.BrokerID, o.MasterEpoch
		// An idle slave's reports are what keep it caught up at its master.
		so.ReportInterval = min(so.ReportInterval, max(o.HAMaxTimeSlaveNotCatchup/4, 10*time.Millisecond))
	}
	s, err := ha.NewSlave(so)
	if err != nil {
		return err
	}
	r.log.Info().Str("master", addr).Msg("replicating from master")
	r.mu.slave, r.mu.masterAddr = s, addr
	return nil
}

// slaveConnected reports whether a slave's replication session with its master is up;
// false on a master and on a slave that has no master address yet.
func (r *replication) slaveConnected() bool {
	r.mu.Lock()
	s := r.mu.slave
	r.mu.Unlock()
	return s != nil && s.Connected()
}

// afterPut wakes the replication writers after an append ending at end and returns the
// send's code: code itself, or for a SYNC_MASTER send that waits for storage the slave
// outcome when it is not an acknowledgement. In controller mode a send that waits is
// answered SLAVE_NOT_AVAILABLE when the SyncStateSet has fewer than MinInSyncReplicas
// members and, with AllAckInSyncStateSet, waits for every member (syncstate.go).
func (r *replication) afterPut(ctx context.Context, end int64, wait bool, code protocol.ResponseCode) protocol.ResponseCode {
	if r == nil || r.master == nil {
		return code
	}
	r.master.Notify()
	if r.sync != nil && wait {
		return r.afterPutInSet(ctx, end, code)
	}
	if r.role != RoleSyncMaster || !wait {
		return code
	}
	return r.waitAny(ctx, end, code)
}

// waitAny is a SYNC_MASTER's wait for any slave's acknowledgement of end.
func (r *replication) waitAny(ctx context.Context, end int64, code protocol.ResponseCode) protocol.ResponseCode {
	if r.master.SlaveCount() == 0 || end-r.master.SlaveAckOffset() >= r.fallbehind {
		return protocol.SlaveNotAvailable
	}
	wctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.master.WaitAck(wctx, end); err != nil {
		r.log.Debug().Err(err).Int64("end", end).Msg("slave acknowledgement missing")
		if errors.Is(err, ha.ErrNoSlave) {
			// The last slave disconnected while the send waited: answered at once, not
			// at haSlaveTimeout, which the client might outlast and resend.
			return protocol.SlaveNotAvailable
		}
		return protocol.FlushSlaveTimeout
	}
	return code
}

// afterPutInSet is afterPut for a send that waits on a controller-mode master.
func (r *replication) afterPutInSet(ctx context.Context, end int64, code protocol.ResponseCode) protocol.ResponseCode {
	if n := r.sync.size(); n < r.opts.MinInSyncReplicas {
		r.log.Debug().Int("members", n).Int("min", r.opts.MinInSyncReplicas).Int64("end", end).
			Msg("SyncStateSet below minInSyncReplicas")
		return protocol.SlaveNotAvailable
	}
	if !r.opts.AllAckInSyncStateSet {
		if r.role != RoleSyncMaster {
			return code
		}
		return r.waitAny(ctx, end, code)
	}
	wctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := r.sync.waitAll(wctx, end); err != nil {
		r.log.Debug().Err(err).Int64("end", end).Msg("SyncStateSet acknowledgement missing")
		return protocol.FlushSlaveTimeout
	}
	return code
}

// runtimeInfo is the replication part of GET_BROKER_RUNTIME_INFO.
func (r *replication) runtimeInfo() map[string]string {
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	if r.master != nil {
		m := map[string]string{
			// RocketMQ's figure: log end minus the highest slave acknowledgement, in bytes.
			"slaveFallBehindMuch":   itoa(r.master.Lag()),
			"ferryHaSlaves":         strconv.Itoa(r.master.SlaveCount()),
			"ferryHaSlaveAckOffset": itoa(r.master.SlaveAckOffset()),
		}
		if r.sync != nil {
			maps.Copy(m, r.sync.runtimeInfo())
			m["ferryMasterEpoch"] = strconv.Itoa(int(r.opts.MasterEpoch))
		}
		return m
	}
	if r.role != RoleSlave {
		return nil
	}
	r.mu.Lock()
	s, addr := r.mu.slave, r.mu.masterAddr
	r.mu.Unlock()
	m := map[string]string{"ferryHaMasterAddr": addr, "ferryHaConnected": "false",
		"ferryHaReplicaOffset": itoa(r.cl.ReplicaOffset())}
	if r.opts.ControllerMode {
		m["ferryMasterEpoch"] = strconv.Itoa(int(r.opts.MasterEpoch))
	}
	if s != nil {
		m["ferryHaConnected"] = strconv.FormatBool(s.Connected())
		select {
		case <-s.Stopped():
			m["ferryHaStopped"] = "true" // for good: LastError says why (ha.ErrDiverged)
		default:
		}
		if err := s.LastError(); err != nil {
			m["ferryHaLastError"] = err.Error()
		}
	}
	return m
}

// close stops replicating (before the store closes). It is idempotent.
func (r *replication) close() error {
	r.mu.Lock()
	r.mu.closed = true
	s := r.mu.slave
	r.mu.slave = nil
	r.mu.Unlock()
	var err error
	if s != nil {
		err = s.Close()
	}
	if r.master != nil {
		if e := r.master.Close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}
