package failover

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ferrymq/ferry/controller"
)

// keeper is a master's SyncStateSet keeper (broker.SyncStateSetKeeper): the set in force
// is the newest the agent learned (heartbeat answers, the master's own changes), and a
// change goes to the controllers quoting the master's epoch and that set's epoch.
type keeper struct {
	a           *Agent
	masterEpoch int32 // the epoch the master it serves was started for
}

// Current returns the SyncStateSet in force and its epoch.
func (k *keeper) Current() ([]int64, int32) {
	v, _ := k.a.View()
	return slices.Clone(v.SyncStateSet), v.SyncStateSetEpoch
}

// Alter asks the controllers to replace the set. A refusal saying the master is stale
// (another epoch, not the master) makes the agent heartbeat at once, so it learns its
// new role; a refusal quoting an old set epoch too, so it learns the set in force.
func (k *keeper) Alter(ctx context.Context, set []int64) ([]int64, int32, error) {
	_, setEpoch := k.Current()
	v, err := k.a.ctl.AlterSyncStateSet(ctx, k.a.opts.Broker.BrokerName, k.a.BrokerID(), k.masterEpoch, setEpoch, set)
	if err != nil {
		if errors.Is(err, controller.ErrStaleEpoch) || errors.Is(err, controller.ErrNotMaster) ||
			errors.Is(err, controller.ErrStaleSyncStateSet) {
			k.a.kickNow()
		}
		return nil, 0, fmt.Errorf("failover: alter SyncStateSet to %v: %w", set, err)
	}
	k.a.setView(v)
	k.a.log.Info().Ints64("syncStateSet", v.SyncStateSet).Int32("syncStateSetEpoch", v.SyncStateSetEpoch).
		Msg("SyncStateSet changed")
	return slices.Clone(v.SyncStateSet), v.SyncStateSetEpoch, nil
}
