// Package broker is Ferry's broker: it wires the message store, the topic, group and
// offset metadata, the client registry and the remoting server together, serves the
// RocketMQ broker requests (one file per request family), holds long polls, and keeps the
// name servers informed.
//
// Each request family is a small type built from the narrow interfaces in deps.go
// (MessageStore, TopicTable, GroupTable, OffsetTable, ClientRegistry, Scheduler,
// TxnService); only the top-level Broker holds the parts themselves, and New wires them
// in one order (see New).
package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/broker/clients"
	"github.com/ferrymq/ferry/broker/dedup"
	"github.com/ferrymq/ferry/broker/groupconf"
	"github.com/ferrymq/ferry/broker/offsets"
	traffic "github.com/ferrymq/ferry/broker/stats"
	"github.com/ferrymq/ferry/broker/topicconf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/schedule"
	"github.com/ferrymq/ferry/store"
	"github.com/ferrymq/ferry/transaction"
)

// Worker pools, one per request class.
const (
	poolSend  = "send"
	poolPull  = "pull"
	poolQuery = "query"
	poolAdmin = "admin"
	poolTx    = "transaction"
)

// clientExpiry is how long a client registration lives without a heartbeat.
const clientExpiry = 120 * time.Second

// Broker serves RocketMQ clients from a Ferry store.
type Broker struct {
	opts Options
	log  zerolog.Logger

	// The parts, opened by New in this order.
	store   *store.Store
	sched   *schedule.Service
	cancels *cancelHandler // FERRY_CANCEL_SCHEDULED (schedcancel.go)
	tx      *transaction.Service
	topics  *topicconf.Manager
	groups  *groupconf.Manager
	offsets *offsets.Store
	clients *clients.Registry

	// The request families.
	conns   *conns
	send    *sender
	txh     *txHandler
	pull    *puller
	polls   *longPoll
	offsetH *offsetHandler
	query   *queryHandler
	admin   *adminHandler
	stats   *statsHandler
	rates   *brokerRates
	dedup   *dedup.Table // sends to topics with a dedup window
	client  *clientHandler
	lock    *lockHandler
	meta    *metadataHandler
	calls   *clientCallHandler
	reply   *replier
	epochs  *epochCacheHandler
	gate    *acl.Gate // in front of every handler with ACL on; nil otherwise
	meters  *meters   // /metrics label bounds, and counters with Options.MetricsEnable

	server *remoting.Server
	nsrv   *remoting.Client
	reg    *registrar
	repl   *replication
	sync   *slaveSync // a slave's metadata sync; nil on a master

	aclWatcher *acl.Watcher // the accounts file New loaded (Options.ACLFile); nil otherwise

	kickRegister chan struct{} // topics changed: register now
	ctx          context.Context
	cancel       context.CancelFunc
	stop         chan struct{}
	wg           sync.WaitGroup
	started      atomic.Bool
	serving      atomic.Bool // Start served the port (Readiness)
	shutdown     sync.Once
}

// dispatched receives the store dispatcher's notifications (store.Options.Notify): held
// pulls and the schedule service wake on them. The store calls it only once started
// (Start), when New has built every part.
func (b *Broker) dispatched(topic string, queueID int32, maxOffset, _ int64) {
	b.polls.notify(topic, queueID, maxOffset)
	b.sched.Notify(topic, queueID, maxOffset)
}

// New opens the store and the metadata and builds the request handlers, in this order:
//  1. the store (its dispatcher notifies Broker.dispatched once started);
//  2. the schedule and transaction services, on the store;
//  3. the topic, group and offset tables (the client registry, which needs nothing, comes
//     first of all, for the transaction checker);
//  4. the name-server client, replication, a slave's metadata sync and the registrar,
//     which calls both back;
//  5. the handlers, each given only the parts it uses.
//
// Every part gets its callbacks in its constructor; Start starts them and writes none of
// their fields.
func New(opts Options) (*Broker, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	b := &Broker{
		opts:         opts,
		log:          opts.Logger.With().Str("component", "broker").Str("broker", opts.BrokerName).Logger(),
		kickRegister: make(chan struct{}, 1),
		stop:         make(chan struct{}),
		conns:        &conns{},
		meters:       newMeters(&opts),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	if b.opts.ACL == nil && b.opts.ACLFile != "" {
		wo := acl.DefaultWatcherOptions()
		wo.Path, wo.Logger = b.opts.ACLFile, b.log
		w, err := acl.NewWatcher(wo)
		if err != nil {
			return nil, fmt.Errorf("broker: %w", err)
		}
		b.aclWatcher, b.opts.ACL = w, w
	}
	if err := b.openParts(); err != nil {
		return nil, errors.Join(err, b.closeACL())
	}
	co := remoting.DefaultClientOptions()
	co.Logger = opts.Logger
	co.TLS = opts.NamesrvTLS
	nsrv, err := remoting.NewClient(co)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("broker: %w", err), b.closeParts(context.Background()), b.closeACL())
	}
	b.nsrv = nsrv
	b.repl = newReplication(&b.opts, b.store.CommitLog(), b.log)
	calls := registrarCalls{haAddr: b.repl.registeredAddr, onResult: b.repl.learnMaster}
	if opts.Role == RoleSlave {
		b.sync = newSlaveSync(&b.opts, nsrv, b.topics, b.groups, b.offsets, b.sched, b.log)
		calls.onMaster = b.sync.setMaster
	}
	b.reg = newRegistrar(&b.opts, b.topics, nsrv, b.kickRegister, calls, b.log)
	do := dedup.DefaultOptions()
	do.MaxKeys, do.Now = opts.DedupMaxKeys, opts.Clock
	if b.dedup, err = dedup.New(do); err != nil {
		return nil, errors.Join(fmt.Errorf("broker: %w", err), nsrv.Close(), b.closeParts(context.Background()), b.closeACL())
	}
	to := traffic.DefaultOptions()
	to.Clock = opts.Clock
	tr, err := traffic.New(to)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("broker: %w", err), nsrv.Close(), b.closeParts(context.Background()), b.closeACL())
	}
	b.buildHandlers(tr)
	if opts.Role != RoleSlave { // a slave stores no sends; promoted, it is a new Broker
		start := time.Now()
		n, err := b.fillDedup(b.dedup)
		if err != nil {
			return nil, errors.Join(err, nsrv.Close(), b.closeParts(context.Background()), b.closeACL())
		}
		if n > 0 {
			b.log.Info().Int("keys", n).Dur("took", time.Since(start)).Msg("dedup table refilled from the store")
		}
	}
	return b, nil
}

// openParts opens the store, the services and the metadata tables.
func (b *Broker) openParts() error {
	o := &b.opts
	so := o.Store // its Logger, Clock and FS are the caller's; the hooks below are the broker's
	so.StoreHost = netip.MustParseAddrPort(o.AdvertisedAddr)
	so.TagsCode = schedule.TagsCoder(o.DelayLevels)
	so.Notify = b.dispatched
	so.Retention = b.retentionOf
	so.Compaction = b.compactionOf
	so.CompactionCopy = o.Role != RoleSlave // a slave's log is written by replication only
	if o.MetricsEnable {
		so.FS = &syncTimedFS{FS: so.FS, dir: filepath.Join(filepath.Clean(so.Dir), store.CommitLogDirName), h: b.meters.flush}
	}
	b.clients = clients.New(clients.Options{Logger: o.Logger})
	var err error
	if b.store, err = store.Open(so); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	closeStore := func(err error) error {
		return errors.Join(fmt.Errorf("broker: %w", err), b.store.Shutdown(context.Background()))
	}
	sco := schedule.DefaultOptions()
	sco.Dir, sco.FS, sco.Store, sco.Levels, sco.Logger, sco.Clock = so.Dir, so.FS, b.store, o.DelayLevels, o.Logger, o.Clock
	if b.sched, err = schedule.New(sco); err != nil {
		return closeStore(err)
	}
	txo := transaction.DefaultOptions()
	txo.Store, txo.FS, txo.Dir, txo.Logger, txo.Clock = b.store, so.FS, so.Dir, o.Logger, o.Clock
	sched := b.sched
	txo.Rewrite = func(rec *message.Record) error {
		_, _, err := sched.Rewrite(rec, nil)
		return err
	}
	txo.Checker = &txChecker{clients: b.clients, conns: b.conns, brokerName: o.BrokerName}
	txo.Offsets = txOffsets{b: b} // b.offsets is opened below, before the service starts
	txo.TransactionTimeout, txo.MaxChecks = o.TransactionTimeout, o.TransactionCheckMax
	if o.TransactionCheckInterval > 0 {
		txo.RecheckInterval = o.TransactionCheckInterval
	}
	if b.tx, err = transaction.New(txo); err != nil {
		return closeStore(err)
	}
	to := topicconf.DefaultOptions()
	to.Dir, to.FS, to.Logger, to.Now = so.Dir, so.FS, o.Logger, o.Clock
	to.AutoCreateTopicEnable, to.DefaultTopicQueueNums = o.AutoCreateTopic, o.DefaultTopicQueueNums
	to.ClusterName, to.BrokerName = o.ClusterName, o.BrokerName
	to.TraceTopicEnable, to.TraceTopicName = o.TraceTopicEnable, o.MsgTraceTopicName
	kick := b.kickRegister
	to.OnChange = func() {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if b.topics, err = topicconf.Open(to); err != nil {
		return closeStore(err)
	}
	gco := groupconf.DefaultOptions()
	gco.Dir, gco.FS, gco.Logger, gco.Now = so.Dir, so.FS, o.Logger, o.Clock
	gco.RetryMaxTimes = int32(o.MaxReconsumeTimes)
	if b.groups, err = groupconf.Open(gco); err != nil {
		return closeStore(err)
	}
	oo := offsets.DefaultOptions()
	oo.Dir, oo.FS, oo.Logger = so.Dir, so.FS, o.Logger
	if b.offsets, err = offsets.Open(oo); err != nil {
		return closeStore(err)
	}
	return nil
}

// buildHandlers builds the request families from the parts; tr keeps the traffic
// statistics (VIEW_BROKER_STATS_DATA).
func (b *Broker) buildHandlers(tr *traffic.Stats) {
	o := &b.opts
	notify := &notifier{clients: b.clients, conns: b.conns, log: b.log}
	b.rates = newBrokerRates(o.Clock, b.damageInfo)
	b.rates.traffic = tr
	sql := newSQLFilters(o.EnablePropertyFilter)
	var counts *meters // nil: the hot paths count nothing
	if o.MetricsEnable {
		counts = b.meters
	}
	b.pull = newPuller(&puller{store: b.store, topics: b.topics, groups: b.groups, clients: b.clients,
		offsets: b.offsets, master: o.BrokerID == 0, slaveRead: o.SlaveReadEnable, sql: sql, rates: b.rates, counts: counts,
		skips: &pullSkips{log: b.log}},
		o.Clock, o.LongPollingEnable, o.ShortPollingTimeout, b.log)
	b.polls = b.pull.polls

	host := netip.MustParseAddrPort(o.AdvertisedAddr)
	b.send = &sender{
		store: b.store, topics: b.topics, sched: b.sched, tx: b.tx, conns: b.conns,
		retry:     &retryPolicy{topics: b.topics, groups: b.groups, log: b.log},
		uniq:      message.NewUniqKeyGenerator(host.Addr(), 0),
		storeHost: host, cluster: o.ClusterName, autoCreate: o.AutoCreateTopic, log: b.log,
		rates: b.rates, repl: b.repl, counts: counts, dedup: b.dedup, acl: o.ACL,
	}
	b.txh = &txHandler{tx: b.tx, records: b.store}
	b.offsetH = &offsetHandler{store: b.store, offsets: b.offsets}
	b.query = &queryHandler{store: b.store, clock: o.Clock}
	b.admin = &adminHandler{store: b.store, topics: b.topics, groups: b.groups, offsets: b.offsets,
		registerNow: b.reg.registerNow}
	b.client = &clientHandler{clients: b.clients, groups: b.groups, topics: b.topics, conns: b.conns,
		notify: notify, sql: sql, clock: o.Clock, log: b.log}
	b.lock = &lockHandler{locks: newQueueLocks(), clock: o.Clock}
	b.meta = &metadataHandler{topics: b.topics, offsets: b.offsets, delay: b.sched}
	b.stats = &statsHandler{store: b.store, topics: b.topics, offsets: b.offsets,
		clients: b.clients, rates: b.rates, config: configProperties(o), liveConfig: b.repl.configProperties,
		brokerName: o.BrokerName, booted: o.Clock(), clock: o.Clock,
		version: protocol.DataVersion{Timestamp: o.Clock().UnixMilli()}}
	b.calls = &clientCallHandler{store: b.store, topics: b.topics, offsets: b.offsets, clients: b.clients,
		conns: b.conns, brokerName: o.BrokerName, timeout: clientCallTimeout, log: b.log}
	b.reply = &replier{send: b.send, clients: b.clients, conns: b.conns, store: o.StoreReplyMessageEnable,
		timeout: replyPushTimeout, log: b.log}
	b.epochs = &epochCacheHandler{opts: o, log: b.store.CommitLog()}
	b.cancels = &cancelHandler{store: b.store, logEnd: b.store.CommitLog().MaxOffset, sched: b.sched, host: host, clock: o.Clock, log: b.log}
	if o.ACL != nil {
		b.gate = acl.NewGate(o.ACL, b.log)
	}
}

// damageInfo reports the store's damage counters and the replication state as
// runtime-info keys.
func (b *Broker) damageInfo() map[string]string {
	d := b.store.Damage()
	m := map[string]string{
		"ferryQuarantinedRanges": strconv.FormatInt(d.QuarantinedRanges, 10),
		"ferryBadReads":          strconv.FormatInt(d.BadReads, 10),
		"ferryScrubs":            strconv.FormatInt(d.Scrubs, 10),
		"ferryScrubFindings":     strconv.FormatInt(d.ScrubFindings, 10),
	}
	rm := b.retentionMetrics()
	m["ferryRetentionExpired"] = strconv.FormatInt(rm.Expired, 10)
	m["ferryPullOffsetTooSmall"] = strconv.FormatInt(rm.SkippedPulls, 10)
	m["ferryPullSkippedMessages"] = strconv.FormatInt(rm.SkippedMessages, 10)
	cs := b.store.CompactionStats()
	m["ferryCompactionMarked"] = strconv.FormatInt(cs.Marked, 10)
	m["ferryCompactionSkipped"] = strconv.FormatInt(cs.Skipped, 10)
	m["ferryCompactionRelocated"] = strconv.FormatInt(cs.Relocated, 10)
	if b.dedup != nil {
		st := b.dedup.Stats()
		m["ferryDedupKeys"] = strconv.Itoa(st.Keys)
		m["ferryDedupDuplicates"] = strconv.FormatUint(st.Duplicates, 10)
		m["ferryDedupEvicted"] = strconv.FormatUint(st.Evicted, 10)
	}
	for k, v := range b.repl.runtimeInfo() {
		m[k] = v
	}
	if b.sync != nil {
		for k, v := range b.sync.runtimeInfo() {
			m[k] = v
		}
	}
	return m
}

// configProperties is GET_BROKER_CONFIG's map: Options.ConfigProperties of the options
// as resolved, or an empty map the broker adds its runtime addresses to.
func configProperties(o *Options) map[string]string {
	var props map[string]string
	if o.ConfigProperties != nil {
		props = o.ConfigProperties(o)
	}
	if props == nil {
		props = map[string]string{}
	}
	return props
}

// Start serves requests on ln and starts the background services: the store, the long-poll
// sweeper, client expiry and name-server registration.
func (b *Broker) Start(ln net.Listener) error {
	if !b.started.CompareAndSwap(false, true) {
		return errors.New("broker: already started")
	}
	o := &b.opts
	so := remoting.DefaultServerOptions()
	so.TLS = o.TLS
	so.MaxFrameSize = o.MaxFrameSize
	so.MaxRequestBytes = o.MaxRequestBytes
	so.IdleTimeout = o.IdleTimeout
	so.Logger = o.Logger
	if o.MetricsEnable {
		so.Observer = &b.meters.rpc
	}
	w := o.Workers
	so.Pools = []remoting.PoolOptions{
		{Name: remoting.DefaultPool, Workers: w.Admin, QueueSize: 10000},
		{Name: poolSend, Workers: w.Send, QueueSize: 10000},
		{Name: poolPull, Workers: w.Pull, QueueSize: 100000},
		{Name: poolQuery, Workers: w.Query, QueueSize: 10000},
		{Name: poolAdmin, Workers: w.Admin, QueueSize: 10000},
		{Name: poolTx, Workers: w.Transaction, QueueSize: 10000},
	}
	so.OnClose = func(ch remoting.Channel) {
		b.polls.dropChannel(ch.ID())
		b.client.channelClosed(ch.ID())
	}
	srv, err := remoting.NewServer(so)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.server = srv
	if err := b.registerHandlers(); err != nil {
		return err
	}
	b.store.Start()
	if err := b.repl.start(); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if s := b.repl.sync; s != nil { // a controller-mode master keeps its SyncStateSet
		b.wg.Go(func() { s.run(b.ctx) })
	}
	if o.Role != RoleSlave { // a slave's log is written by replication only
		b.sched.Start()
		if err := b.tx.Start(); err != nil {
			return fmt.Errorf("broker: %w", err)
		}
	}
	if err := srv.Start(ln); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.serving.Store(true)
	b.wg.Go(func() { b.polls.run(b.stop) })
	b.wg.Go(func() { b.rates.traffic.Run(b.ctx) })
	b.wg.Go(func() { b.client.expire(b.stop) })
	b.wg.Go(func() { b.reg.run(b.ctx) })
	if b.sync != nil {
		b.wg.Go(func() { b.sync.run(b.ctx) })
	}
	b.log.Info().Str("listen", ln.Addr().String()).Str("advertised", o.AdvertisedAddr).
		Str("role", o.Role.String()).Str("ha", b.repl.registeredAddr()).Msg("broker started")
	return nil
}

// HAAddr is the replication address registered with the name servers (a master's
// bound HA listener once started).
func (b *Broker) HAAddr() string { return b.repl.registeredAddr() }

// Addr is the listening address.
func (b *Broker) Addr() net.Addr { return b.server.Addr() }

// RequestCodes returns the request codes the broker serves, in ascending order (every
// one has a row in acl.Rules, which a test enforces).
func (b *Broker) RequestCodes() []int16 { return b.server.Codes() }

// Failed is closed when the broker stops accepting connections on its own (see
// remoting.Server.Failed); nil before Start. Its owner should shut it down.
func (b *Broker) Failed() <-chan struct{} {
	if !b.started.Load() || b.server == nil {
		return nil
	}
	return b.server.Failed()
}

// ServeErr is why the broker stopped accepting connections, or nil.
func (b *Broker) ServeErr() error {
	if !b.started.Load() || b.server == nil {
		return nil
	}
	return b.server.ServeErr()
}

// Store exposes the message store (tests and tools).
func (b *Broker) Store() *store.Store { return b.store }

// Shutdown stops the broker gracefully: held pulls are answered, the remoting server
// drains in-flight requests and closes, the broker unregisters from the name servers,
// and offsets, metadata and the store are flushed. It is idempotent.
func (b *Broker) Shutdown(ctx context.Context) error {
	var errs []error
	b.shutdown.Do(func() {
		close(b.stop)
		b.cancel()
		if b.polls != nil {
			b.polls.releaseAll()
		}
		if b.server != nil {
			if err := b.server.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		b.wg.Wait()
		if err := b.repl.close(); err != nil {
			errs = append(errs, err)
		}
		if b.started.Load() {
			b.reg.unregisterAll(ctx)
		}
		errs = append(errs, b.nsrv.Close(), b.closeParts(ctx), b.closeACL())
		b.log.Info().Msg("broker stopped")
	})
	return errors.Join(errs...)
}

// closeACL stops the accounts-file watcher the broker started, if any.
func (b *Broker) closeACL() error {
	if b.aclWatcher == nil {
		return nil
	}
	return b.aclWatcher.Close()
}

// closeParts flushes and closes the metadata, the services and the store.
func (b *Broker) closeParts(ctx context.Context) error {
	return errors.Join(b.offsets.Close(), b.tx.Shutdown(ctx), b.sched.Shutdown(ctx), b.store.Shutdown(ctx))
}

// bornHost parses a channel's remote address for the BORNHOST field.
func bornHost(ch remoting.Channel) netip.AddrPort {
	ap, err := netip.ParseAddrPort(ch.RemoteAddr())
	if err != nil {
		return netip.AddrPort{}
	}
	return ap
}

// respond builds a response with a code and remark.
func respond(req *remoting.Command, code protocol.ResponseCode, remark string) *remoting.Command {
	return remoting.NewResponse(req, int16(code), remark)
}

// fail is a handler error answering code with remark.
func fail(code protocol.ResponseCode, format string, args ...any) error {
	return &remoting.CodeError{Code: int16(code), Remark: fmt.Sprintf(format, args...)}
}
