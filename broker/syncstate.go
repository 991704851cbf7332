package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/ha"
)

// A controller-mode master's SyncStateSet: the replicas that hold everything it
// acknowledged, the only ones the controller elects from (RocketMQ 5's
// syncStateSet).
//
// The set in force is the controller's: Options.SyncStateSet.Current, or what its Alter
// answered. The master's upkeep loop (run, every syncStateTick) asks the controller to
// change it:
//
//   - grow: a connected slave of the master's epoch that is caught up (it acknowledged
//     the log's end, or everything the log held less than joinWindow ago; see package
//     ha, Peers) first becomes a joiner: from then on every send that waits for the set
//     waits for it too. The master notes its log's end at that moment (the mark); once
//     the joiner has acknowledged the mark it holds everything acknowledged without it,
//     and the master asks the controller to add it. A joiner that disconnects or does not
//     reach its mark within HAMaxTimeSlaveNotCatchup stops being one.
//   - shrink: a member (never the master itself) that has not caught up for
//     HAMaxTimeSlaveNotCatchup (disconnected members do not catch up; one not seen since
//     the master started counts from the start) is dropped.
//
// Until the controller answers, the set in force does not change: a send keeps waiting
// for a member being dropped, so a master cut off from its slaves and the controller
// acknowledges nothing (with AllAckInSyncStateSet) rather than something a newly elected
// master might lack.
//
// Lock order: syncState.mu only; ha.Master's lock is never taken under it.
type syncState struct {
	keeper    SyncStateSetKeeper
	log       logEnd
	self      int64 // the master's id in the set (Options.AssignedID)
	epoch     int32
	maxBehind time.Duration
	tick      time.Duration
	lg        zerolog.Logger

	master  *ha.Master // set by replication.start before run and before any send
	started time.Time  // when run started: members not seen since count from here

	mu struct {
		sync.Mutex
		set      []int64 // in force, ascending
		setEpoch int32
		joining  map[int64]*joiner
		changed  chan struct{} // closed and replaced when the ids sends wait for change
	}
}

// logEnd is the commit log's end (the store's commit log).
type logEnd interface{ MaxOffset() int64 }

// joiner is a slave counted for acknowledgements before the controller adds it.
type joiner struct {
	mark  int64 // the log's end when it became one
	since time.Time
}

// Upkeep timing.
const (
	// maxSyncStateTick bounds the upkeep period (HAMaxTimeSlaveNotCatchup/4 below it).
	maxSyncStateTick = time.Second
	// joinWindow: a slave that acknowledged everything the log held this recently is
	// caught up enough to join.
	joinWindow = time.Second
	// alterTimeout bounds one Alter call.
	alterTimeout = 5 * time.Second
)

// newSyncState returns the upkeep of o's master (controller mode).
func newSyncState(o *Options, log logEnd, lg zerolog.Logger) *syncState {
	s := &syncState{keeper: o.SyncStateSet, log: log, self: o.AssignedID, epoch: o.MasterEpoch,
		maxBehind: o.HAMaxTimeSlaveNotCatchup, lg: lg.With().Str("component", "syncstateset").Logger()}
	s.tick = min(max(o.HAMaxTimeSlaveNotCatchup/4, 10*time.Millisecond), maxSyncStateTick)
	s.mu.joining = make(map[int64]*joiner)
	s.mu.changed = make(chan struct{})
	s.mu.set, s.mu.setEpoch = sortedIDs(o.SyncStateSet.Current())
	return s
}

// sortedIDs returns a sorted copy of set, with its epoch.
func sortedIDs(set []int64, epoch int32) ([]int64, int32) {
	set = slices.Clone(set)
	slices.Sort(set)
	return slices.Compact(set), epoch
}

// current is the set in force and its epoch.
func (s *syncState) current() ([]int64, int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mu.set), s.mu.setEpoch
}

// size is the number of members of the set in force.
func (s *syncState) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.set)
}

// waitIDs returns the slaves a send waits for (the set's members but the master, and
// the joiners) and a channel closed when they change.
func (s *syncState) waitIDs() ([]int64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.mu.set)+len(s.mu.joining))
	for _, id := range s.mu.set {
		if id != s.self {
			ids = append(ids, id)
		}
	}
	for id := range s.mu.joining {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids, s.mu.changed
}

// waitAll blocks until every slave a send waits for has acknowledged end, or ctx ends
// (its error).
func (s *syncState) waitAll(ctx context.Context, end int64) error {
	for {
		acks := s.master.Changes() // before looking: no acknowledgement is missed
		ids, changed := s.waitIDs()
		if s.master.AckedBy(ids, end) {
			return nil
		}
		select {
		case <-acks:
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the SyncStateSet %v to acknowledge %d: %w", ids, end, ctx.Err())
		}
	}
}

// changedLocked wakes the sends waiting for the set. s.mu is held.
func (s *syncState) changedLocked() {
	close(s.mu.changed)
	s.mu.changed = make(chan struct{})
}

// adopt makes set (from the controller) the set in force; joiners it includes are
// members now.
func (s *syncState) adopt(set []int64, epoch int32) {
	set, epoch = sortedIDs(set, epoch)
	s.mu.Lock()
	defer s.mu.Unlock()
	if epoch == s.mu.setEpoch && slices.Equal(set, s.mu.set) {
		return
	}
	s.lg.Info().Ints64("from", s.mu.set).Ints64("to", set).Int32("setEpoch", epoch).Msg("SyncStateSet in force")
	s.mu.set, s.mu.setEpoch = set, epoch
	for id := range s.mu.joining {
		if slices.Contains(set, id) {
			delete(s.mu.joining, id)
		}
	}
	s.changedLocked()
}

// run keeps the set until ctx ends.
func (s *syncState) run(ctx context.Context) {
	s.started = time.Now()
	t := time.NewTicker(s.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.upkeep(ctx, time.Now())
	}
}

// upkeep is one round: take in the controller's set, move joiners, and ask for the
// additions and removals due.
func (s *syncState) upkeep(ctx context.Context, now time.Time) {
	s.adopt(s.keeper.Current())
	set, _ := s.current()
	if !slices.Contains(set, s.self) {
		s.lg.Warn().Ints64("set", set).Int64("self", s.self).
			Msg("this master is not in its SyncStateSet: leaving it alone (the failover agent should re-check the role)")
		return
	}
	peers := map[int64]ha.Peer{}
	for _, p := range s.master.Peers() {
		peers[p.BrokerID] = p
	}
	var add, drop []int64
	for _, id := range set {
		if id == s.self {
			continue
		}
		last := s.started
		if p, ok := peers[id]; ok && p.CaughtUp.After(last) {
			last = p.CaughtUp
		}
		if now.Sub(last) > s.maxBehind {
			drop = append(drop, id)
		}
	}
	add = s.moveJoiners(set, peers, now)
	if len(add) == 0 && len(drop) == 0 {
		return
	}
	next := slices.DeleteFunc(slices.Clone(set), func(id int64) bool { return slices.Contains(drop, id) })
	next, _ = sortedIDs(append(next, add...), 0)
	actx, cancel := context.WithTimeout(ctx, alterTimeout)
	got, epoch, err := s.keeper.Alter(actx, next)
	cancel()
	if err != nil {
		s.lg.Warn().Err(err).Ints64("set", set).Ints64("add", add).Ints64("drop", drop).
			Msg("the controller did not change the SyncStateSet: the set in force stays (retried)")
		return
	}
	s.adopt(got, epoch)
}

// moveJoiners drops the joiners that left or stayed behind, makes joiners of the
// caught-up slaves outside the set, and returns the joiners that reached their mark.
func (s *syncState) moveJoiners(set []int64, peers map[int64]ha.Peer, now time.Time) []int64 {
	var ready, fresh []int64
	s.mu.Lock()
	for id, j := range s.mu.joining {
		p := peers[id]
		switch {
		case !p.Connected || p.Epoch != s.epoch || now.Sub(j.since) > s.maxBehind:
			delete(s.mu.joining, id)
			s.changedLocked()
		case p.Ack >= j.mark:
			ready = append(ready, id)
		}
	}
	end := s.log.MaxOffset()
	for id, p := range peers {
		_, joining := s.mu.joining[id]
		if joining || slices.Contains(set, id) || !p.Connected || p.Epoch != s.epoch {
			continue
		}
		if p.Ack >= end || now.Sub(p.CaughtUp) <= joinWindow {
			s.mu.joining[id] = &joiner{since: now, mark: 1<<63 - 1}
			fresh = append(fresh, id)
		}
	}
	if len(fresh) > 0 {
		s.changedLocked()
	}
	s.mu.Unlock()
	if len(fresh) == 0 {
		slices.Sort(ready)
		return ready
	}
	// Every send that looked at the ids before the joiners were added ended at or
	// before the end read now.
	mark := s.log.MaxOffset()
	s.mu.Lock()
	for _, id := range fresh {
		if j := s.mu.joining[id]; j != nil {
			j.mark = mark
		}
	}
	s.mu.Unlock()
	for _, id := range fresh {
		if s.master.AckedBy([]int64{id}, mark) {
			ready = append(ready, id)
		}
	}
	slices.Sort(ready)
	return ready
}

// runtimeInfo is the SyncStateSet part of GET_BROKER_RUNTIME_INFO.
func (s *syncState) runtimeInfo() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	joining := make([]int64, 0, len(s.mu.joining))
	for id := range s.mu.joining {
		joining = append(joining, id)
	}
	slices.Sort(joining)
	return map[string]string{
		"ferrySyncStateSet":      joinIDs(s.mu.set),
		"ferrySyncStateSetEpoch": fmt.Sprint(s.mu.setEpoch),
		"ferrySyncStateJoining":  joinIDs(joining),
	}
}

// joinIDs writes ids as "1,2,3".
func joinIDs(ids []int64) string {
	b := make([]byte, 0, 4*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = fmt.Append(b, id)
	}
	return string(b)
}
