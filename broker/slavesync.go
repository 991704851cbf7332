package broker

// A slave's copy of its master's metadata (spec storage-and-broker.md §7.2; RocketMQ's
// SlaveSynchronize). Topics, subscription groups, consumer offsets and delay progress
// are not in the commit log, so a slave reads them from its master's broker port —
// GET_ALL_TOPIC_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG, GET_ALL_CONSUMER_OFFSET,
// GET_ALL_DELAY_OFFSET — every SlaveSyncInterval and at once when it learns a new
// master address. The address is the masterAddr of the name servers' answer to its
// registration (set while the master is registered, absent once it is gone, when the
// sync pauses), not the HA address.
//
// What each copy does:
//   - topics and groups: the slave's table becomes the master's (built-in topics the
//     master lacks are kept) when the data versions differ, written as the master
//     writes it (temp file, rename) before it is served;
//   - consumer offsets: the master's offsets replace the slave's for every key the
//     master has; keys only the slave has stay (RocketMQ's putAll). A slave accepts
//     UPDATE_CONSUMER_OFFSET (clients commit to it while the master is down) but not
//     offsets piggy-backed on pulls; while the master is up its values win at each sync;
//   - delay progress: the level cursors and delayOffset.json (the slave delivers
//     nothing, but a directory later started as a master resumes from there).
//
// One goroutine (run, owned by the Broker) does the copies; a failed call is logged
// and retried at the next tick.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl/sign"
	"github.com/ferrymq/ferry/broker/groupconf"
	"github.com/ferrymq/ferry/broker/offsets"
	"github.com/ferrymq/ferry/broker/topicconf"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/schedule"
)

// slaveSyncTimeout bounds one metadata call to the master (RocketMQ: 3 s).
const slaveSyncTimeout = 3 * time.Second

// slaveSync copies the master's metadata into a slave's tables.
//
// Lock order: mu only, never held while calling the master or the tables.
type slaveSync struct {
	rc       *remoting.Client
	creds    sign.Credentials // signs the requests (a master with ACL on)
	interval time.Duration
	log      zerolog.Logger
	clock    func() time.Time

	topics interface {
		ReplaceAll(protocol.TopicConfigSerializeWrapper) (bool, error)
	}
	groups interface {
		ReplaceAll(groupconf.Table) (bool, error)
	}
	offsets interface {
		Merge(map[offsets.Key]int64) int
		Flush() error
	}
	delay interface {
		SyncLevelOffsets(map[int]int64) error
		SyncTimerProgress(watermark int64, delivered [][2]int64) error
	}

	kick chan struct{} // a new master address: sync now; capacity 1

	mu struct {
		sync.Mutex
		master   string    // the master's broker address; "" while none is registered
		lastSync time.Time // end of the last complete sync
		lastErr  error     // of the last attempt
	}
}

// newSlaveSync returns a slave's metadata sync into the tables, calling its master
// through rc.
func newSlaveSync(o *Options, rc *remoting.Client, topics *topicconf.Manager, groups *groupconf.Manager,
	offs *offsets.Store, delay *schedule.Service, log zerolog.Logger) *slaveSync {
	return &slaveSync{rc: rc, creds: o.Credentials, interval: o.SlaveSyncInterval, log: log, clock: o.Clock,
		topics: topics, groups: groups, offsets: offs, delay: delay, kick: make(chan struct{}, 1)}
}

// setMaster records the master's broker address from a registration round ("" when the
// name servers know no live master) and asks for a sync when it changed to a new one.
func (s *slaveSync) setMaster(addr string) {
	s.mu.Lock()
	changed := addr != s.mu.master
	s.mu.master = addr
	s.mu.Unlock()
	if !changed {
		return
	}
	if addr == "" {
		s.log.Warn().Msg("no master registered: metadata sync paused")
		return
	}
	s.log.Info().Str("master", addr).Msg("syncing metadata from master")
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// run syncs every interval and on every kick until ctx ends.
func (s *slaveSync) run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
		s.mu.Lock()
		master := s.mu.master
		s.mu.Unlock()
		if master == "" {
			continue
		}
		err := s.syncFrom(ctx, master)
		s.mu.Lock()
		s.mu.lastErr = err
		if err == nil {
			s.mu.lastSync = s.clock()
		}
		s.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			s.log.Warn().Err(err).Str("master", master).Msg("metadata sync from master failed")
		}
	}
}

// syncFrom copies the four tables from the master at addr; each copy is independent,
// and every failure is returned.
func (s *slaveSync) syncFrom(ctx context.Context, addr string) error {
	var errs []error
	if body, err := s.fetch(ctx, addr, protocol.GetAllTopicConfig); err != nil {
		errs = append(errs, err)
	} else if w, err := protocol.DecodeTopicConfigSerializeWrapper(body); err != nil {
		errs = append(errs, err)
	} else if _, err := s.topics.ReplaceAll(*w); err != nil {
		errs = append(errs, err)
	}
	if body, err := s.fetch(ctx, addr, protocol.GetAllSubscriptionGroupConfig); err != nil {
		errs = append(errs, err)
	} else if w, err := protocol.DecodeSubscriptionGroupWrapper(body); err != nil {
		errs = append(errs, err)
	} else if _, err := s.groups.ReplaceAll(groupTableOf(w)); err != nil {
		errs = append(errs, err)
	}
	if body, err := s.fetch(ctx, addr, protocol.GetAllConsumerOffset); err != nil {
		errs = append(errs, err)
	} else if w, err := protocol.DecodeConsumerOffsetSerializeWrapper(body); err != nil {
		errs = append(errs, err)
	} else if s.offsets.Merge(offsetKeys(w)) > 0 {
		if err := s.offsets.Flush(); err != nil {
			errs = append(errs, err)
		}
	}
	if body, err := s.fetch(ctx, addr, protocol.GetAllDelayOffset); err != nil {
		errs = append(errs, err)
	} else if w, err := protocol.DecodeDelayOffsetSerializeWrapper(body); err != nil {
		errs = append(errs, err)
	} else {
		if err := s.delay.SyncLevelOffsets(delayLevels(w)); err != nil {
			errs = append(errs, err)
		}
		if tp := w.TimerProgress; tp != nil {
			if err := s.delay.SyncTimerProgress(tp.Watermark, tp.Delivered); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// fetch sends a request without ext fields to the master and returns the body of its
// SUCCESS answer.
func (s *slaveSync) fetch(ctx context.Context, addr string, code protocol.RequestCode) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, slaveSyncTimeout)
	defer cancel()
	resp, err := s.rc.Invoke(cctx, addr, signed(s.creds, remoting.NewRequest(int16(code), nil)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", code, err)
	}
	if resp.Code != int16(protocol.Success) {
		return nil, fmt.Errorf("%s: master answered %s: %s", code, protocol.ResponseCode(resp.Code), resp.Remark)
	}
	return resp.Body, nil
}

// runtimeInfo is the sync's part of GET_BROKER_RUNTIME_INFO.
func (s *slaveSync) runtimeInfo() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]string{"ferrySlaveSyncMaster": s.mu.master, "ferrySlaveSyncTime": "0"}
	if !s.mu.lastSync.IsZero() {
		m["ferrySlaveSyncTime"] = strconv.FormatInt(s.mu.lastSync.UnixMilli(), 10)
	}
	if s.mu.lastErr != nil {
		m["ferrySlaveSyncError"] = s.mu.lastErr.Error()
	}
	return m
}

// groupTableOf converts a GET_ALL_SUBSCRIPTIONGROUP_CONFIG body to the group table.
func groupTableOf(w *protocol.SubscriptionGroupWrapper) groupconf.Table {
	t := groupconf.Table{SubscriptionGroupTable: make(map[string]groupconf.Config, len(w.SubscriptionGroupTable)),
		DataVersion: w.DataVersion}
	for name, sg := range w.SubscriptionGroupTable {
		cfg := groupConfigOf(&sg)
		cfg.GroupName = name
		t.SubscriptionGroupTable[name] = cfg
	}
	return t
}

// groupConfigOf keeps the 4.x fields of a subscription group config.
func groupConfigOf(sg *protocol.SubscriptionGroupConfig) groupconf.Config {
	return groupconf.Config{GroupName: sg.GroupName, ConsumeEnable: sg.ConsumeEnable,
		ConsumeFromMinEnable: sg.ConsumeFromMinEnable, ConsumeBroadcastEnable: sg.ConsumeBroadcastEnable,
		RetryQueueNums: sg.RetryQueueNums, RetryMaxTimes: sg.RetryMaxTimes, BrokerID: sg.BrokerID,
		WhichBrokerWhenConsumeSlowly:   sg.WhichBrokerWhenConsumeSlowly,
		NotifyConsumerIDsChangedEnable: sg.NotifyConsumerIDsChangedEnable}
}
