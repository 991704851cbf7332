package failover

import (
	"context"
	"time"

	"github.com/ferrymq/ferry/controller"
)

// handOver ends the running master's service with a planned switchover, at most
// HandoverTimeout (within ctx): when the controllers answered the last heartbeat and
// the group's state names this broker master at its epoch with another member of the
// SyncStateSet alive, it
//
//  1. stops the broker gracefully: requests in flight are answered (sends waiting for
//     the slaves included, replication still running), then replication stops; from
//     here on the log does not grow;
//  2. asks the controllers to elect the most caught-up alive member of the set
//     (mostCaughtUp: each says where its log ends now), quoting its own epoch
//     (controller.Client.ElectFrom: a group that moved on meanwhile is left alone, a
//     retried request is idempotent);
//  3. waits until the elected broker serves the new epoch (its epoch history, as a
//     slave would ask for it), so that the process exits only once clients can reach
//     a master.
//
// Stopping before the election keeps every acknowledged message on the set (with
// allAckInSyncStateSet a send is acknowledged once every member has it) and leaves no
// send waiting on a slave that became master. Otherwise, or when a step fails, it only
// logs: the broker is stopped by Shutdown as without a handover, and the controllers
// elect once its heartbeat lapses. The error is the broker's shutdown error.
func (a *Agent) handOver(ctx context.Context) error {
	cur := a.cur
	if a.opts.HandoverTimeout <= 0 {
		return nil
	}
	a.mu.Lock()
	v, haveView, id := a.mu.view, a.mu.haveView, a.mu.id
	a.mu.Unlock()
	var why string
	target, ok := handoverTarget(v, id)
	switch {
	case a.hbFailures > 0 || !haveView:
		why = "the controllers did not answer the last heartbeat"
	case v.Master != id || v.MasterEpoch != cur.role.epoch:
		why = "the group's state names another master or epoch"
	case !ok:
		why = "no other member of the SyncStateSet is alive"
	}
	if why != "" {
		a.log.Info().Str("why", why).Ints64("syncStateSet", v.SyncStateSet).Msg("no handover: stopping")
		return nil
	}
	t0 := time.Now()
	hctx, cancel := context.WithTimeout(ctx, a.opts.HandoverTimeout)
	defer cancel()
	a.log.Info().Int32("epoch", cur.role.epoch).
		Msg("handing over: stopping this master, then asking the controllers to elect an in-sync slave")
	err := cur.b.Shutdown(ctx)
	end := cur.b.Store().CommitLog().MaxOffset()
	a.setLastEnd(end)
	a.setCurrent(nil)
	target, targetEnd := a.mostCaughtUp(hctx, v, id, target)
	nv, eerr := a.ctl.ElectFrom(hctx, a.opts.Broker.BrokerName, target.ID, cur.role.epoch)
	if eerr != nil {
		a.log.Warn().Err(eerr).Int64("to", target.ID).
			Msg("handover: the controllers did not elect; they will once this broker's heartbeat lapses")
		return err
	}
	m, _ := nv.Member(nv.Master)
	a.log.Info().Int64("master", nv.Master).Int32("masterEpoch", nv.MasterEpoch).Int64("maxOffset", end).
		Int64("masterMaxOffset", targetEnd).Msg("handover: new master elected; waiting for it to serve")
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		select {
		case <-hctx.Done():
			a.log.Warn().Int64("master", nv.Master).Int32("masterEpoch", nv.MasterEpoch).Dur("waited", time.Since(t0)).
				Msg("handover: the new master does not serve yet; stopping anyway")
			return err
		case <-pause.C:
		}
		rctx, rcancel := context.WithTimeout(hctx, a.opts.Controller.Timeout)
		hist, _, herr := a.masterHistory(rctx, m.Addr)
		rcancel()
		if herr == nil && len(hist) > 0 && hist[len(hist)-1].Epoch >= nv.MasterEpoch {
			a.log.Info().Int64("master", nv.Master).Int32("masterEpoch", nv.MasterEpoch).
				Dur("took", time.Since(t0)).Msg("handed over: the new master serves")
			return err
		}
		pause.Reset(a.opts.RetryInterval)
	}
}

// mostCaughtUp asks each alive member of v's SyncStateSet other than self where its log
// ends now (its epoch history and max offset, GET_BROKER_EPOCH_CACHE; the heartbeats'
// figures may be a heartbeat old) and returns the one with the highest (last epoch, max
// offset), the lowest id on a tie, with its max offset. When none answers it returns
// fallback, chosen from the heartbeats (handoverTarget), with its reported offset.
func (a *Agent) mostCaughtUp(ctx context.Context, v controller.GroupView, self int64,
	fallback controller.MemberView) (controller.MemberView, int64) {
	best, bestEpoch, bestEnd, found := fallback, int32(0), int64(0), false
	for _, id := range v.SyncStateSet {
		m, ok := v.Member(id)
		if !ok || id == self || !m.Alive {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, a.opts.Controller.Timeout)
		hist, end, err := a.masterHistory(rctx, m.Addr)
		cancel()
		if err != nil {
			a.log.Info().Err(err).Int64("brokerId", id).Msg("handover: a slave did not say where its log ends")
			continue
		}
		epoch := int32(0)
		if len(hist) > 0 {
			epoch = hist[len(hist)-1].Epoch
		}
		if !found || epoch > bestEpoch || epoch == bestEpoch && end > bestEnd {
			best, bestEpoch, bestEnd, found = m, epoch, end, true
		}
	}
	if !found {
		return fallback, fallback.MaxOffset
	}
	return best, bestEnd
}

// handoverTarget is the member of v's SyncStateSet, other than self, that an
// outgoing master hands over to: alive at the controllers' leader, with the highest
// reported (epoch, log end), the lowest id on a tie. ok is false when there is none.
func handoverTarget(v controller.GroupView, self int64) (controller.MemberView, bool) {
	var best controller.MemberView
	found := false
	for _, id := range v.SyncStateSet {
		m, ok := v.Member(id)
		if !ok || id == self || !m.Alive {
			continue
		}
		if !found || m.Epoch > best.Epoch || m.Epoch == best.Epoch && m.MaxOffset > best.MaxOffset {
			best, found = m, true
		}
	}
	return best, found
}
