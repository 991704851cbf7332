// Package broker is Ferry's broker: it wires the message store, the topic, group and
// offset metadata, the client registry and the remoting server together, serves the
// RocketMQ broker requests (one file per request family), holds long polls, and keeps the
// name servers informed.
//
// Handlers reach their dependencies through the Broker's fields, each of which is a
// narrow, separately tested component: store.Store, topicconf.Manager, groupconf.Manager,
// offsets.Store, clients.Registry and the long-poll holder.
package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker/clients"
	"github.com/ferrymq/ferry/broker/groupconf"
	"github.com/ferrymq/ferry/broker/offsets"
	"github.com/ferrymq/ferry/broker/topicconf"
	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
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

// Options configures a Broker.
type Options struct {
	// Config is the broker configuration (validated by New).
	Config conf.BrokerConfig
	// Logger receives everything the broker logs.
	Logger zerolog.Logger
	// FS is the file system of the store and metadata (mmap.OSFS{} by default).
	FS mmap.FS
	// Clock is the broker's clock (time.Now by default).
	Clock func() time.Time
	// TuneStore, if set, adjusts the store options derived from Config (tests use it
	// for small files).
	TuneStore func(*store.Options)
}

// DefaultOptions returns options with the default configuration.
func DefaultOptions() Options {
	return Options{Config: conf.DefaultBrokerConfig(), Logger: zerolog.Nop(), FS: mmap.OSFS{}, Clock: time.Now}
}

// Validate reports invalid options.
func (o *Options) Validate() error {
	if o.FS == nil || o.Clock == nil {
		return errors.New("broker: FS and Clock must be set")
	}
	return o.Config.Validate()
}

// Broker serves RocketMQ clients from a Ferry store.
type Broker struct {
	opts      Options
	cfg       conf.BrokerConfig
	log       zerolog.Logger
	storeHost netip.AddrPort
	addr      string // advertised "ip:port"
	uniq      *message.UniqKeyGenerator

	store   *store.Store
	topics  *topicconf.Manager
	groups  *groupconf.Manager
	offsets *offsets.Store
	clients *clients.Registry
	polls   *longPoll
	sched   *schedule.Service
	tx      *transaction.Service
	locks   *queueLocks
	delay   func(*message.Record) error // moves a record asking for a delay into the schedule topics
	server  *remoting.Server
	nsrv    *remoting.Client

	chans    sync.Map // channel id → remoting.Channel, for calls back to clients
	txConns  sync.Map // producer group → id of the channel its last half message came on
	register chan struct{}
	ctx      context.Context // cancelled by Shutdown
	cancel   context.CancelFunc
	stop     chan struct{}
	wg       sync.WaitGroup
	started  atomic.Bool
	shutdown sync.Once
	scratch  sync.Pool // of *[]byte, for building properties
}

// New opens the store and the metadata under the configured data directory and prepares
// the request handlers. Start serves them.
func New(opts Options) (*Broker, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cfg := opts.Config
	b := &Broker{
		opts:     opts,
		cfg:      cfg,
		log:      opts.Logger.With().Str("component", "broker").Str("broker", cfg.BrokerName).Logger(),
		addr:     cfg.EffectiveAdvertisedAddr(),
		register: make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	host, err := netip.ParseAddrPort(b.addr)
	if err != nil {
		return nil, fmt.Errorf("broker: advertised address %q must be ip:port: %w", b.addr, err)
	}
	b.storeHost = host
	b.uniq = message.NewUniqKeyGenerator(host.Addr(), 0)
	if err := b.openParts(); err != nil {
		return nil, err
	}
	return b, nil
}

// openParts opens the store and metadata.
func (b *Broker) openParts() error {
	cfg, o := b.cfg, b.opts
	so := store.DefaultOptions()
	so.Dir, so.FS, so.Logger, so.Clock, so.StoreHost = cfg.DataDir, o.FS, o.Logger, o.Clock, b.storeHost
	so.SegmentSize = cfg.CommitLogSegmentSize
	so.FlushMode = commitlog.FlushAsync
	if cfg.FlushDiskType == conf.SyncFlush {
		so.FlushMode = commitlog.FlushSync
	}
	so.FlushInterval, so.FlushLeastPages = cfg.FlushInterval, cfg.FlushLeastPages
	so.FlushThoroughInterval, so.SyncFlushTimeout = cfg.FlushThoroughInterval, cfg.SyncFlushTimeout
	so.UnitsPerFile = cfg.ConsumeQueueUnitsPerFile
	so.MaxMessageSize = int(cfg.MaxMessageSize)
	so.FileReservedTime = cfg.FileReservedTime
	if hours, err := conf.ParseDeleteWhen(cfg.DeleteWhen); err == nil {
		so.DeleteWhen = hours
	}
	so.DiskMaxUsedRatio = float64(cfg.DiskMaxUsedRatio) / 100
	so.DiskForceCleanRatio = float64(cfg.DiskForceCleanRatio) / 100
	so.DiskFullRatio = float64(cfg.DiskFullRatio) / 100
	levels, err := cfg.DelayLevelDurations()
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	so.TagsCode = schedule.TagsCoder(levels)
	so.Notify = func(topic string, queueID int32, maxOffset, _ int64) {
		b.polls.notify(topic, queueID, maxOffset)
		if b.sched != nil {
			b.sched.Notify(topic, queueID, maxOffset)
		}
	}
	if o.TuneStore != nil {
		o.TuneStore(&so)
	}
	b.polls = newLongPoll(b)
	b.locks = newQueueLocks()
	if b.store, err = store.Open(so); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	sco := schedule.DefaultOptions()
	sco.Dir, sco.FS, sco.Store, sco.Levels, sco.Logger, sco.Clock = cfg.DataDir, o.FS, b.store, levels, o.Logger, o.Clock
	if b.sched, err = schedule.New(sco); err != nil {
		return errors.Join(fmt.Errorf("broker: %w", err), b.store.Shutdown(context.Background()))
	}
	b.delay = func(rec *message.Record) error {
		_, _, err := b.sched.Rewrite(rec, nil)
		return err
	}
	txo := transaction.DefaultOptions()
	txo.Store, txo.FS, txo.Dir, txo.Checker, txo.Rewrite = b.store, o.FS, cfg.DataDir, txChecker{b}, b.delay
	txo.Logger, txo.Clock = o.Logger, o.Clock
	txo.TransactionTimeout, txo.MaxChecks = cfg.TransactionTimeout, cfg.TransactionCheckMax
	if cfg.TransactionCheckInterval > 0 {
		txo.RecheckInterval = cfg.TransactionCheckInterval
	}
	if b.tx, err = transaction.New(txo); err != nil {
		return errors.Join(fmt.Errorf("broker: %w", err), b.store.Shutdown(context.Background()))
	}
	to := topicconf.DefaultOptions()
	to.Dir, to.FS, to.Logger, to.Now = cfg.DataDir, o.FS, o.Logger, o.Clock
	to.AutoCreateTopicEnable, to.DefaultTopicQueueNums = cfg.AutoCreateTopic, cfg.DefaultTopicQueueNums
	to.ClusterName, to.BrokerName = cfg.ClusterName, cfg.BrokerName
	to.OnChange = b.kickRegister
	if b.topics, err = topicconf.Open(to); err != nil {
		return errors.Join(fmt.Errorf("broker: %w", err), b.store.Shutdown(context.Background()))
	}
	gco := groupconf.DefaultOptions()
	gco.Dir, gco.FS, gco.Logger, gco.Now = cfg.DataDir, o.FS, o.Logger, o.Clock
	if b.groups, err = groupconf.Open(gco); err != nil {
		return errors.Join(fmt.Errorf("broker: %w", err), b.store.Shutdown(context.Background()))
	}
	oo := offsets.DefaultOptions()
	oo.Dir, oo.FS, oo.Logger = cfg.DataDir, o.FS, o.Logger
	if b.offsets, err = offsets.Open(oo); err != nil {
		return errors.Join(fmt.Errorf("broker: %w", err), b.store.Shutdown(context.Background()))
	}
	b.clients = clients.New(clients.Options{Logger: o.Logger})
	return nil
}

// Start serves requests on ln and starts the background services: the store, the long-poll
// sweeper, client expiry and name-server registration.
func (b *Broker) Start(ln net.Listener) error {
	if !b.started.CompareAndSwap(false, true) {
		return errors.New("broker: already started")
	}
	so := remoting.DefaultServerOptions()
	so.MaxFrameSize = int(b.cfg.MaxFrameSize)
	so.IdleTimeout = b.cfg.IdleTimeout
	so.Logger = b.opts.Logger
	w := b.cfg.Workers
	so.Pools = []remoting.PoolOptions{
		{Name: remoting.DefaultPool, Workers: w.Admin, QueueSize: 10000},
		{Name: poolSend, Workers: w.Send, QueueSize: 10000},
		{Name: poolPull, Workers: w.Pull, QueueSize: 100000},
		{Name: poolQuery, Workers: w.Query, QueueSize: 10000},
		{Name: poolAdmin, Workers: w.Admin, QueueSize: 10000},
		{Name: poolTx, Workers: w.Transaction, QueueSize: 10000},
	}
	so.OnClose = b.channelClosed
	srv, err := remoting.NewServer(so)
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.server = srv
	if err := b.registerHandlers(); err != nil {
		return err
	}
	co := remoting.DefaultClientOptions()
	co.Logger = b.opts.Logger
	if b.nsrv, err = remoting.NewClient(co); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.store.Start()
	b.sched.Start()
	if err := b.tx.Start(); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	if err := srv.Start(ln); err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	b.goTracked(b.polls.run)
	b.goTracked(b.expireClients)
	b.goTracked(b.registerLoop)
	b.log.Info().Str("listen", ln.Addr().String()).Str("advertised", b.addr).Msg("broker started")
	return nil
}

// Addr is the listening address.
func (b *Broker) Addr() net.Addr { return b.server.Addr() }

// Store exposes the message store (tests and tools).
func (b *Broker) Store() *store.Store { return b.store }

func (b *Broker) goTracked(fn func()) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn()
	}()
}

// Shutdown stops the broker gracefully: held pulls are answered, the remoting server
// drains in-flight requests and closes, the broker unregisters from the name servers,
// and offsets, metadata and the store are flushed. It is idempotent.
func (b *Broker) Shutdown(ctx context.Context) error {
	var errs []error
	b.shutdown.Do(func() {
		close(b.stop)
		b.cancel()
		b.polls.releaseAll()
		if b.server != nil {
			if err := b.server.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		b.wg.Wait()
		if b.nsrv != nil {
			b.unregisterAll(ctx)
			errs = append(errs, b.nsrv.Close())
		}
		errs = append(errs, b.offsets.Close(), b.tx.Shutdown(ctx), b.sched.Shutdown(ctx), b.store.Shutdown(ctx))
		b.log.Info().Msg("broker stopped")
	})
	return errors.Join(errs...)
}

// channelClosed forgets a connection and notifies the consumer groups it was in.
func (b *Broker) channelClosed(ch remoting.Channel) {
	b.chans.Delete(ch.ID())
	b.txConns.Range(func(group, id any) bool {
		if id.(uint64) == ch.ID() {
			b.txConns.CompareAndDelete(group, id)
		}
		return true
	})
	b.polls.dropChannel(ch.ID())
	b.notifyGroups(b.clients.ChannelClosed(ch.ID()))
}

// expireClients drops registrations not refreshed by a heartbeat for clientExpiry.
func (b *Broker) expireClients() {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.notifyGroups(b.clients.Expire(b.opts.Clock(), clientExpiry))
		}
	}
}

// notifyGroups sends NOTIFY_CONSUMER_IDS_CHANGED (oneway) to every member of each group.
func (b *Broker) notifyGroups(groups []string) {
	for _, g := range groups {
		for _, id := range b.clients.ConsumerChannels(g) {
			v, ok := b.chans.Load(id)
			if !ok {
				continue
			}
			req := remoting.NewRequest(int16(protocol.NotifyConsumerIDsChanged), map[string]string{"consumerGroup": g})
			if err := v.(remoting.Channel).InvokeOneway(context.Background(), req); err != nil {
				b.log.Debug().Err(err).Str("group", g).Msg("notify consumer ids changed")
			}
		}
	}
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

// itoa formats an int64.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// joinSorted joins ids for logs.
func joinSorted(ids []string) string {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return strings.Join(ids, ",")
}
