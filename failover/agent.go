package failover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/ha"
	"github.com/ferrymq/ferry/remoting"
)

// controllerAPI is what the agent asks of the controllers; *controller.Client has it
// (tests give the agent an in-memory fake).
type controllerAPI interface {
	Register(ctx context.Context, r controller.BrokerReport) (int64, controller.GroupView, error)
	Heartbeat(ctx context.Context, r controller.BrokerReport) (controller.GroupView, error)
	AlterSyncStateSet(ctx context.Context, group string, masterID int64, masterEpoch, setEpoch int32,
		set []int64) (controller.GroupView, error)
	Close() error
}

// role is a broker's place in its group as the controllers assign it.
type role struct {
	master bool
	epoch  int32 // the master epoch it serves under
	// A slave's master: its id, broker address (for its epoch history) and HA address.
	masterID             int64
	masterAddr, masterHA string
}

// String names the role for logs and readiness answers.
func (r role) String() string {
	if r.master {
		return fmt.Sprintf("master (epoch %d)", r.epoch)
	}
	return fmt.Sprintf("slave of broker %d at %s (epoch %d)", r.masterID, r.masterAddr, r.epoch)
}

// instance is a broker the agent started, in the role it was started for.
type instance struct {
	b     *broker.Broker
	role  role
	since time.Time
}

// Agent runs one broker of a group in controller mode. It registers with the
// controllers (keeping the id they assign in the store directory), heartbeats every
// HeartbeatInterval, and serves the role the group's state gives it: the master, or a
// slave of the master, each time as a new broker.Broker on the same port. A role change
// (an election, the master's HA address moving) shuts the running broker down and starts
// the next one; a master that sees another master or a newer epoch stops serving first
// (fenced). A slave's log is cut back to where it agrees with its master's (the epoch
// histories, ha.ConsistentPoint) before it starts. While the controllers cannot be
// reached the agent keeps its role. See the package documentation for the timeline.
//
// The agent owns two goroutines (Start), stopped by Shutdown: the heartbeat, which keeps
// the broker alive in the controllers' eyes even while a role change takes its time, and
// the loop, which acts on the answers.
type Agent struct {
	opts   Options
	log    zerolog.Logger
	ctl    controllerAPI
	epochs *ha.EpochFile
	peers  *remoting.Client // asks masters for their epoch history
	addr   string           // the broker port, listened on again after a role change
	haAddr string           // the HA address reported while not serving as master

	kick      chan struct{}             // heartbeat now (capacity 1): OnFenced, a refused set change
	fencedLog atomic.Int64              // when fenced last logged (Unix ns)
	views     chan controller.GroupView // the newest answer, heartbeat → loop (capacity 1)
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	failed    chan struct{} // closed by fail
	failOnce  sync.Once
	started   atomic.Bool
	shutOnce  sync.Once
	shutErr   error

	// Owned by the heartbeat goroutine.
	hbFailures int // consecutive failed heartbeats (logs)

	// Owned by the loop goroutine (and by Shutdown once it has returned).
	ln       net.Listener         // the listener the next broker serves; nil: listen again
	cur      *instance            // the running broker; also a.mu.cur
	last     controller.GroupView // the answer acted on last
	pending  time.Time            // when the role the agent is moving to was first assigned; zero: none
	from     string               // the role served before the pending change ("": none)
	failures int                  // consecutive failed starts

	mu struct { // shared: readiness, the report, the SyncStateSet keeper
		sync.Mutex
		id         int64
		registered bool
		view       controller.GroupView
		haveView   bool
		want       role // the role the newest answer assigned
		haveWant   bool // the group has a master
		cur        *instance
		lastEnd    int64  // the log's end when no broker runs
		waiting    string // what the agent is doing while cur does not serve want
		failErr    error
	}
}

// New checks o, reads the broker id kept in the store directory and the epoch file, and
// returns an agent ready to Start. It contacts nobody yet.
func New(o Options) (*Agent, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ctl, err := controller.NewClient(o.Controller)
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	a, err := newAgent(o, ctl)
	if err != nil {
		return nil, errors.Join(err, ctl.Close())
	}
	return a, nil
}

// newAgent is New with the controllers' client given (tests pass a fake).
func newAgent(o Options, ctl controllerAPI) (*Agent, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	so := o.Broker.Store
	id, err := loadIdentity(so.FS, so.Dir, o.Broker.BrokerName)
	if err != nil {
		return nil, err
	}
	epochs, err := ha.OpenEpochFile(so.FS, so.Dir)
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	ro := remoting.DefaultClientOptions()
	ro.TLS, ro.Logger = o.Broker.NamesrvTLS, o.Logger
	ro.RequestTimeout = o.Controller.Timeout
	peers, err := remoting.NewClient(ro)
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	a := &Agent{
		opts:   o,
		log:    o.Logger.With().Str("component", "failover").Str("broker", o.Broker.BrokerName).Logger(),
		ctl:    ctl,
		epochs: epochs,
		peers:  peers,
		addr:   o.Listener.Addr().String(),
		haAddr: reportedHAAddr(&o.Broker),
		ln:     o.Listener,
		kick:   make(chan struct{}, 1),
		views:  make(chan controller.GroupView, 1),
		failed: make(chan struct{}),
	}
	a.ctx, a.cancel = context.WithCancel(context.Background())
	a.mu.id = id
	return a, nil
}

// Start starts the agent: it finds where the local log ends, registers, and from then on
// heartbeats and serves the assigned role.
func (a *Agent) Start() error {
	if !a.started.CompareAndSwap(false, true) {
		return errors.New("failover: already started")
	}
	a.wg.Go(a.heartbeats)
	a.wg.Go(a.run)
	return nil
}

// Failed is closed when the agent gave up: the broker stopped accepting connections on
// its own, the log or the epoch file could not be written, the assigned role could not
// be started MaxStartFailures times in a row, or the controllers do not know the broker
// id kept in the store directory. Its owner should shut it down (the process exits, its
// supervisor restarts it, and meanwhile the controllers elect another master).
func (a *Agent) Failed() <-chan struct{} { return a.failed }

// ServeErr is why the agent gave up (Failed), or nil.
func (a *Agent) ServeErr() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.failErr
}

// Missing names what the agent lacks for clients to use its broker, each as one short
// phrase: a registration, a master in the group, a broker serving the role the newest
// answer of the controllers assigned, then what that broker lacks (broker.Readiness).
// Empty when ready.
func (a *Agent) Missing() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.mu.failErr != nil:
		return []string{"failover agent stopped: " + a.mu.failErr.Error()}
	case !a.mu.registered:
		return []string{"not registered with a controller"}
	case !a.mu.haveWant:
		return []string{"no master elected for broker group " + a.opts.Broker.BrokerName}
	case a.mu.cur == nil || a.mu.cur.role != a.mu.want:
		if a.mu.waiting != "" {
			return []string{a.mu.waiting}
		}
		return []string{"changing role to " + a.mu.want.String()}
	}
	return a.mu.cur.b.Readiness().Missing()
}

// Ready reports whether a broker serves the assigned role, registered (Missing is empty).
func (a *Agent) Ready() bool { return len(a.Missing()) == 0 }

// Broker returns the broker serving now, nil between roles (metrics, tests). It may be
// shut down at any moment by a role change.
func (a *Agent) Broker() *broker.Broker {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.cur == nil {
		return nil
	}
	return a.mu.cur.b
}

// BrokerID returns the id the controllers assigned, 0 before the first registration of
// a new broker.
func (a *Agent) BrokerID() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.id
}

// View returns the group's state as the agent last learned it.
func (a *Agent) View() (controller.GroupView, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.view, a.mu.haveView
}

// Shutdown stops the loop, then shuts the running broker down gracefully within ctx
// (ShutdownTimeout when ctx has no deadline), and closes the connections. The controllers
// are not told: they notice the missing heartbeats, as after a crash. It is idempotent.
func (a *Agent) Shutdown(ctx context.Context) error {
	a.shutOnce.Do(func() {
		a.cancel()
		a.wg.Wait()
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, a.opts.ShutdownTimeout)
			defer cancel()
		}
		var errs []error
		if a.cur != nil {
			errs = append(errs, a.cur.b.Shutdown(ctx))
			a.setCurrent(nil)
		}
		if a.ln != nil {
			errs = append(errs, ignoreClosed(a.ln.Close()))
			a.ln = nil
		}
		errs = append(errs, a.peers.Close(), a.ctl.Close())
		a.shutErr = errors.Join(errs...)
	})
	return a.shutErr
}

// Close is Shutdown within ShutdownTimeout.
func (a *Agent) Close() error { return a.Shutdown(context.Background()) }

// ignoreClosed drops the error of closing a listener that was already closed.
func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// fail records why the agent gives up and closes Failed; the loop returns after it.
func (a *Agent) fail(err error) {
	a.failOnce.Do(func() {
		a.log.Error().Err(err).Msg("failover agent gives up")
		a.mu.Lock()
		a.mu.failErr = err
		a.mu.Unlock()
		close(a.failed)
	})
}

// kickNow makes the heartbeat goroutine report at once.
func (a *Agent) kickNow() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// fenced is the brokers' OnFenced: the broker learned it is stale; ask the controllers.
// A broker may say so on every attempt of something (a refused replication hello): the
// warning is logged at most once a second.
func (a *Agent) fenced(reason error) {
	now := time.Now().UnixNano()
	if last := a.fencedLog.Load(); now-last >= int64(time.Second) && a.fencedLog.CompareAndSwap(last, now) {
		a.log.Warn().Err(reason).Msg("broker reports it is fenced; asking the controllers")
	}
	a.kickNow()
}

// setCurrent publishes the running broker (nil: none).
func (a *Agent) setCurrent(cur *instance) {
	a.cur = cur
	a.mu.Lock()
	a.mu.cur, a.mu.waiting = cur, ""
	a.mu.Unlock()
}

// setLastEnd records where the log ends while no broker runs.
func (a *Agent) setLastEnd(end int64) {
	a.mu.Lock()
	a.mu.lastEnd = end
	a.mu.Unlock()
}

// setWaiting publishes what the agent does while no broker serves the assigned role.
func (a *Agent) setWaiting(why string) {
	a.mu.Lock()
	a.mu.waiting = why
	a.mu.Unlock()
}

// setView keeps the newest group state: a higher master epoch, or the same with a
// SyncStateSet epoch at least as high (answers may arrive out of order: heartbeats and
// the master's own set changes).
func (a *Agent) setView(v controller.GroupView) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.setViewLocked(v)
}

// setViewLocked is setView with a.mu held.
func (a *Agent) setViewLocked(v controller.GroupView) {
	old := a.mu.view
	if a.mu.haveView && (v.MasterEpoch < old.MasterEpoch ||
		v.MasterEpoch == old.MasterEpoch && v.SyncStateSetEpoch < old.SyncStateSetEpoch) {
		return
	}
	a.mu.view, a.mu.haveView = v, true
}

// heartbeats finds where the log ends, then registers and heartbeats every
// HeartbeatInterval (at once when kicked), handing each answer to the loop, until
// Shutdown or fail. A registration is retried every RetryInterval.
func (a *Agent) heartbeats() {
	end, err := a.logEnd()
	if err != nil {
		a.fail(err)
		return
	}
	a.mu.Lock()
	a.mu.lastEnd = end
	a.mu.Unlock()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-a.failed:
			return
		case <-a.kick:
		case <-t.C:
		}
		if v, ok := a.beat(); ok {
			select { // the loop needs the newest answer only
			case <-a.views:
			default:
			}
			a.views <- v
		}
		next := a.opts.HeartbeatInterval
		if !a.registered() {
			next = min(next, a.opts.RetryInterval)
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
	}
}

// beat registers (until that succeeded once) or heartbeats, and returns the group's
// state. When the controllers cannot be reached it logs (the first failure, then every
// 30th) and returns false: the agent keeps its role.
func (a *Agent) beat() (controller.GroupView, bool) {
	ctx, cancel := context.WithTimeout(a.ctx, a.opts.Controller.Timeout)
	defer cancel()
	r := a.report()
	if !a.registered() {
		return a.register(ctx, r)
	}
	v, err := a.ctl.Heartbeat(ctx, r)
	if err != nil {
		if a.ctx.Err() != nil {
			return v, false
		}
		a.hbFailures++
		if a.hbFailures == 1 || a.hbFailures%30 == 0 {
			a.log.Warn().Err(err).Int("failures", a.hbFailures).Msg("heartbeat to the controllers failed; keeping the current role")
		}
		if errors.Is(err, controller.ErrUnknownBroker) || errors.Is(err, controller.ErrUnknownGroup) {
			a.mu.Lock()
			a.mu.registered = false // register again (under the same id)
			a.mu.Unlock()
		}
		return v, false
	}
	if a.hbFailures > 0 {
		a.log.Info().Int("failures", a.hbFailures).Msg("heartbeats reach the controllers again")
		a.hbFailures = 0
	}
	return v, true
}

// register registers the broker, keeping a newly assigned id durably before anything
// else, and returns the group's state.
func (a *Agent) register(ctx context.Context, r controller.BrokerReport) (controller.GroupView, bool) {
	id, v, err := a.ctl.Register(ctx, r)
	switch {
	case err == nil:
	case a.ctx.Err() != nil:
		return v, false
	case r.BrokerID != controller.NoBroker &&
		(errors.Is(err, controller.ErrUnknownBroker) || errors.Is(err, controller.ErrUnknownGroup)):
		so := a.opts.Broker.Store
		a.fail(fmt.Errorf("failover: the controllers do not know broker id %d of group %q kept in %s/%s "+
			"(controllers reset?); remove that file to register as a new broker, whose log then "+
			"counts for nothing in elections: %w", r.BrokerID, r.Group, so.Dir, identityName, err))
		return v, false
	default:
		a.hbFailures++
		if a.hbFailures == 1 || a.hbFailures%30 == 0 {
			a.log.Warn().Err(err).Int("failures", a.hbFailures).Msg("registration with the controllers failed; retrying")
		}
		return v, false
	}
	a.hbFailures = 0
	if r.BrokerID == controller.NoBroker {
		so := a.opts.Broker.Store
		if err := storeIdentity(so.FS, so.Dir, a.opts.Broker.BrokerName, id); err != nil {
			a.fail(err)
			return v, false
		}
	} else if id != r.BrokerID {
		a.fail(fmt.Errorf("failover: registered as broker id %d, the controllers answered %d", r.BrokerID, id))
		return v, false
	}
	a.mu.Lock()
	a.mu.id, a.mu.registered = id, true
	a.mu.Unlock()
	a.log.Info().Int64("brokerId", id).Int32("epoch", r.Epoch).Int64("maxOffset", r.MaxOffset).
		Msg("registered with the controllers")
	return v, true
}

// registered reports whether the broker registered with the controllers.
func (a *Agent) registered() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mu.registered
}

// run is the agent's loop: it acts on each answer the heartbeat hands over, and tries a
// pending role change again every RetryInterval, until Shutdown or fail.
func (a *Agent) run() {
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	for {
		var brokerFailed <-chan struct{}
		if a.cur != nil {
			brokerFailed = a.cur.b.Failed()
		}
		var retryC <-chan time.Time
		if !a.pending.IsZero() {
			retry.Reset(a.opts.RetryInterval)
			retryC = retry.C
		}
		select {
		case <-a.ctx.Done():
			return
		case <-a.failed:
			return
		case <-brokerFailed:
			a.fail(fmt.Errorf("failover: the broker stopped accepting connections: %w", a.cur.b.ServeErr()))
			return
		case v := <-a.views:
			a.act(v)
		case <-retryC:
			a.act(a.last)
		}
		if !retry.Stop() {
			select {
			case <-retry.C:
			default:
			}
		}
	}
}

// report is what the broker tells the controllers: its addresses, id, and log position
// (the running broker's, else where the log ended).
func (a *Agent) report() controller.BrokerReport {
	o := &a.opts.Broker
	a.mu.Lock()
	id, end, haAddr := a.mu.id, a.mu.lastEnd, a.haAddr
	if cur := a.mu.cur; cur != nil {
		end = cur.b.Store().CommitLog().MaxOffset()
		if cur.role.master {
			haAddr = cur.b.HAAddr()
		}
	}
	a.mu.Unlock()
	return controller.BrokerReport{Cluster: o.ClusterName, Group: o.BrokerName, Addr: o.AdvertisedAddr,
		HAAddr: haAddr, BrokerID: id, Epoch: epochAt(a.epochs.Entries(), end), MaxOffset: end}
}

// epochAt is the epoch of the log's last byte, the newest entry starting at or before end
// (0: none). A slave adopts its master's whole history, whose newest epochs may start
// past what it has copied so far.
func epochAt(entries []ha.EpochEntry, end int64) int32 {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].StartOffset <= end {
			return entries[i].Epoch
		}
	}
	return 0
}

// assigned is the role the group's state v gives this broker; false while the group
// has no master (or the master's addresses are unknown).
func (a *Agent) assigned(v controller.GroupView) (role, bool) {
	if v.Master == controller.NoBroker {
		return role{}, false
	}
	if v.Master == a.BrokerID() {
		return role{master: true, epoch: v.MasterEpoch}, true
	}
	m, ok := v.Member(v.Master)
	if !ok || m.Addr == "" || m.HAAddr == "" {
		return role{}, false
	}
	return role{epoch: v.MasterEpoch, masterID: v.Master, masterAddr: m.Addr, masterHA: m.HAAddr}, true
}

// act serves the role v assigns. A master that is no longer the group's master at its
// epoch stops at once (fenced); a role change shuts the running broker down and starts
// the next one; a failed start is tried again after RetryInterval.
func (a *Agent) act(v controller.GroupView) {
	a.last = v
	want, ok := a.assigned(v)
	a.mu.Lock()
	a.setViewLocked(v)
	a.mu.want, a.mu.haveWant = want, ok
	a.mu.Unlock()
	if a.cur != nil {
		a.from = a.cur.role.String()
	}
	if a.cur != nil && a.cur.role.master && (!ok || !want.master || want.epoch != a.cur.role.epoch) {
		a.log.Warn().Int32("epoch", a.cur.role.epoch).Int64("groupMaster", v.Master).Int32("groupEpoch", v.MasterEpoch).
			Msg("fenced: the controllers elected another master or a newer epoch; this master stops serving")
		a.stop("fenced")
	}
	if !ok {
		return // a slave goes on serving reads until a master is elected
	}
	if a.cur != nil && a.cur.role == want {
		a.failures = 0
		return
	}
	if a.pending.IsZero() {
		a.pending = time.Now()
	}
	if a.cur != nil {
		a.stop("role change")
	}
	a.setWaiting("starting as " + want.String())
	cur, err := a.start(want)
	switch {
	case errors.Is(err, errNotYet):
		a.log.Debug().Err(err).Str("role", want.String()).Msg("waiting for the group to settle")
		a.setWaiting("waiting to start as " + want.String() + ": " + err.Error())
		return
	case err != nil:
		a.failures++
		a.log.Error().Err(err).Str("role", want.String()).Int("failures", a.failures).Msg("starting the broker failed")
		a.setWaiting("starting as " + want.String() + " failed (retrying): " + err.Error())
		if a.failures >= a.opts.MaxStartFailures {
			a.fail(fmt.Errorf("failover: starting as %s failed %d times: %w", want, a.failures, err))
		}
		return
	}
	a.failures = 0
	a.setCurrent(cur)
	if a.from == "" {
		a.from = "none"
	}
	a.log.Info().Str("from", a.from).Str("to", want.String()).Int32("epoch", want.epoch).
		Int64("maxOffset", cur.b.Store().CommitLog().MaxOffset()).
		Dur("took", time.Since(a.pending)).Msg("broker serving its assigned role")
	a.pending, a.from = time.Time{}, ""
}

// stop shuts the running broker down (bounded by ShutdownTimeout) and keeps where its log
// ended.
func (a *Agent) stop(why string) {
	cur := a.cur
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), a.opts.ShutdownTimeout)
	err := cur.b.Shutdown(ctx)
	cancel()
	a.setLastEnd(cur.b.Store().CommitLog().MaxOffset())
	a.setCurrent(nil)
	ev := a.log.Info()
	if err != nil {
		ev = a.log.Error().Err(err)
	}
	ev.Str("role", cur.role.String()).Str("why", why).Dur("took", time.Since(t0)).Dur("served", time.Since(cur.since)).
		Msg("broker stopped")
}
