package broker

// Controller mode (automatic failover, RocketMQ 5's controller mode reimplemented).
//
// The broker does not talk to the controller itself: a failover agent (package failover)
// registers with it, heartbeats, learns the broker's role, id and master epoch, and
// builds the Broker with them (Options.ControllerMode, Role, BrokerID, AssignedID,
// MasterEpoch, HAMasterAddr). A role change shuts the Broker down and builds a new one on
// the same data directory and port, so every role-dependent part starts clean through
// the code paths of fixed roles. What the broker does itself in controller mode:
//
//   - A master registers with the name servers as broker id 0 carrying its MasterEpoch
//     (ferryMasterEpoch), which lets it take over its group's id-0 binding from the old
//     master's registration (package nameserver); a slave registers under its assigned id.
//   - A slave replicates from the static HAMasterAddr and identifies itself to its master
//     with its broker id and epoch (package ha, identity hello); the master admits only
//     slaves of its own epoch.
//   - A master keeps its SyncStateSet through Options.SyncStateSet (syncstate.go): it asks
//     the controller to add a slave that caught up and to drop a member that has not
//     caught up for HAMaxTimeSlaveNotCatchup; with AllAckInSyncStateSet a send waits for
//     every member; fewer members than MinInSyncReplicas refuse SEND_OK.
//   - It serves its epoch history (GET_BROKER_EPOCH_CACHE, epochcache.go).
//   - It reports evidence that it is stale to Options.OnFenced: a slave of a higher epoch,
//     or a name server holding a higher one.

import (
	"context"
	"errors"

	"github.com/ferrymq/ferry/ha"
)

// ErrFenced is wrapped by the reasons Options.OnFenced receives: this broker serves an
// epoch that a newer master has replaced.
var ErrFenced = errors.New("broker: fenced: a newer master epoch exists")

// SyncStateSetKeeper is a controller-mode master's line to the controller for its own
// group (the failover agent implements it with the controller client, bound to this
// master's id and epoch).
type SyncStateSetKeeper interface {
	// Current returns the set in force (broker ids, ascending) and its epoch, as last
	// learned from the controller.
	Current() (set []int64, setEpoch int32)
	// Alter asks the controller to replace the set and returns the set in force after.
	Alter(ctx context.Context, set []int64) ([]int64, int32, error)
}

// EpochEntry is one entry of a broker's epoch history: from StartOffset on, its log was
// written by the master of Epoch (package ha's epoch file, which is an EpochSource).
type EpochEntry = ha.EpochEntry

// EpochSource is a broker's epoch history (the epoch file), served by
// GET_BROKER_EPOCH_CACHE.
type EpochSource interface {
	// Entries returns the history, ascending by epoch and start offset.
	Entries() []EpochEntry
}

// fence tells Options.OnFenced that the broker is stale, with reason (which wraps
// ErrFenced).
func fence(o *Options, reason error) {
	if o.OnFenced != nil {
		o.OnFenced(reason)
	}
}
