package controller

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Errors a command may be refused with. A refused command changes nothing, except an
// election that finds no candidate: it records that the group has no master
// (ErrNoCandidate with Result.Changed set).
var (
	// ErrUnknownGroup: the command names a broker group nobody registered.
	ErrUnknownGroup = errors.New("controller: unknown broker group")
	// ErrUnknownBroker: the command names a broker id that is not a member of the group.
	ErrUnknownBroker = errors.New("controller: unknown broker id")
	// ErrAddressInUse: a broker registers with an id under an address another member holds.
	ErrAddressInUse = errors.New("controller: address held by another member")
	// ErrNotMaster: an alter-SyncStateSet request from a broker that is not the master.
	ErrNotMaster = errors.New("controller: not the group's master")
	// ErrStaleEpoch: a request quoting a master epoch other than the current one.
	ErrStaleEpoch = errors.New("controller: stale master epoch")
	// ErrStaleSyncStateSet: an alter-SyncStateSet request quoting an old SyncStateSet epoch.
	ErrStaleSyncStateSet = errors.New("controller: stale SyncStateSet epoch")
	// ErrMasterNotInSet: a new SyncStateSet without the master in it.
	ErrMasterNotInSet = errors.New("controller: SyncStateSet must contain the master")
	// ErrNoChange: an alter-SyncStateSet request for the set already in place.
	ErrNoChange = errors.New("controller: SyncStateSet unchanged")
	// ErrMasterAlive: an election while the master is alive and eligible (and no other
	// broker was designated).
	ErrMasterAlive = errors.New("controller: master still alive")
	// ErrNotEligible: the designated broker is not alive or (without unclean election)
	// not in the SyncStateSet.
	ErrNotEligible = errors.New("controller: designated broker not eligible")
	// ErrNoCandidate: no alive broker may be elected; the group is left without a master.
	ErrNoCandidate = errors.New("controller: no eligible broker to elect")
	// ErrBadCommand: a command that does not decode or has an unknown kind.
	ErrBadCommand = errors.New("controller: bad command")
)

// NoBroker is the broker id meaning "none": assigned ids start at 1 (a master registers
// with the name servers as broker id 0 whatever its assigned id).
const NoBroker int64 = 0

// Group is the replicated state of one broker group (a brokerName).
type Group struct {
	// Name is the broker group's name (brokerName).
	Name string
	// Members maps each assigned broker id to the broker's addresses.
	Members map[int64]Member
	// NextID is the id the next new broker will be assigned.
	NextID int64
	// Master is the master's broker id, NoBroker when the group has none.
	Master int64
	// MasterEpoch is bumped by every election; 0 before the first.
	MasterEpoch int32
	// SyncStateSet lists, ascending, the replicas in sync with the master (the master
	// included while there is one).
	SyncStateSet []int64
	// SyncStateSetEpoch is bumped by every change of the SyncStateSet.
	SyncStateSetEpoch int32
	// MasterRestarted is set when the master registered after a start (a new process
	// or agent) naming the current master epoch as one it may have served: a master
	// that restarts must not serve under an epoch it served before (a machine crash
	// may have cut its log behind what its slaves copied, and it would write other
	// bytes at offsets they hold under the same epoch). The next election — which the
	// Raft leader runs at once, although the master is alive — may re-elect it, at a
	// new epoch; every election clears the flag.
	MasterRestarted bool
}

// Member is one broker of a group as registered.
type Member struct {
	// Addr is the broker's advertised remoting address, host:port.
	Addr string
	// HAAddr is the address of the broker's HA listener (replication), host:port; empty
	// when the broker did not report one.
	HAAddr string
}

// clone returns a deep copy.
func (g *Group) clone() Group {
	c := *g
	c.Members = maps.Clone(g.Members)
	c.SyncStateSet = slices.Clone(g.SyncStateSet)
	return c
}

// inSet reports whether id is in the SyncStateSet.
func (g *Group) inSet(id int64) bool {
	_, found := slices.BinarySearch(g.SyncStateSet, id)
	return found
}

// Replica is one broker as the Raft leader sees it when it proposes an election: alive
// (its heartbeat has not lapsed) with the log offset and epoch its last heartbeat
// reported.
type Replica struct {
	// ID is the broker's assigned id.
	ID int64
	// Epoch is the last master epoch in the broker's log.
	Epoch int32
	// Offset is the broker's maximum commit-log offset.
	Offset int64
}

// Kind is a command's type.
type Kind uint8

// The command kinds. Values are part of the encoded layout: never renumber.
const (
	// KindRegister registers a broker (assigning an id) or updates its address.
	KindRegister Kind = 1
	// KindElect elects a master.
	KindElect Kind = 2
	// KindAlterSyncStateSet replaces the SyncStateSet at the master's request.
	KindAlterSyncStateSet Kind = 3
)

// Command is one entry of the replicated log. Which fields matter depends on Kind.
// Everything the outcome depends on is in the command (liveness and offsets included),
// so that every node applying it reaches the same state.
type Command struct {
	// Kind selects the command.
	Kind Kind
	// Group is the broker group.
	Group string
	// BrokerID is, for KindRegister, the id a broker already holds (NoBroker to be
	// assigned one); for KindElect, the designated broker (NoBroker: the policy
	// chooses); for KindAlterSyncStateSet, the requesting master.
	BrokerID int64
	// Addr and HAAddr are the registering broker's remoting and HA addresses
	// (KindRegister).
	Addr, HAAddr string
	// Alive lists the brokers alive when the election was proposed, with their reported
	// epochs and offsets (KindElect).
	Alive []Replica
	// Unclean allows electing a broker outside the SyncStateSet (KindElect).
	Unclean bool
	// MasterEpoch is the master epoch the request is about: for KindAlterSyncStateSet
	// the epoch the master quotes; for KindElect the epoch the election is to replace
	// (0: whichever is current), which makes a retried election idempotent; for
	// KindRegister, from a broker that has just started, the newest epoch in its epoch
	// file — the newest it may have served as master before the start (0: none, or
	// not a start).
	MasterEpoch int32
	// SyncStateSetEpoch is what the master quotes (KindAlterSyncStateSet).
	SyncStateSetEpoch int32
	// SyncStateSet is the requested set (KindAlterSyncStateSet).
	SyncStateSet []int64
}

// Result is the outcome of applying one command.
type Result struct {
	// Err is nil on success, else one of the Err* values (test with errors.Is).
	Err error
	// Changed reports whether the state changed.
	Changed bool
	// BrokerID is the registered broker's id (KindRegister) or the elected master.
	BrokerID int64
	// Group is the group's state after the command (zero for an unknown group).
	Group Group
}

// Machine is the controller's deterministic state machine: no goroutines, clocks or
// I/O. Raft applies the same commands in the same order on every node, so every node
// holds the same Machine. A Machine is not safe for concurrent use.
type Machine struct {
	groups map[string]*Group
}

// NewMachine returns an empty machine.
func NewMachine() *Machine { return &Machine{groups: make(map[string]*Group)} }

// Group returns a copy of a group's state.
func (m *Machine) Group(name string) (Group, bool) {
	g, ok := m.groups[name]
	if !ok {
		return Group{}, false
	}
	return g.clone(), true
}

// Groups returns a copy of every group's state, sorted by name.
func (m *Machine) Groups() []Group {
	out := make([]Group, 0, len(m.groups))
	for _, name := range slices.Sorted(maps.Keys(m.groups)) {
		out = append(out, m.groups[name].clone())
	}
	return out
}

// DryRun returns what Apply would return for c, changing nothing: the Raft leader asks
// before it proposes an election, so that a check finding nothing to do costs no log
// entry.
func (m *Machine) DryRun(c Command) Result {
	tmp := NewMachine()
	if g, ok := m.groups[c.Group]; ok {
		cl := g.clone()
		tmp.groups[c.Group] = &cl
	}
	return tmp.Apply(c)
}

// Apply applies one command.
func (m *Machine) Apply(c Command) Result {
	var r Result
	switch c.Kind {
	case KindRegister:
		r = m.register(c)
	case KindElect:
		r = m.elect(c)
	case KindAlterSyncStateSet:
		r = m.alter(c)
	default:
		return Result{Err: fmt.Errorf("%w: kind %d", ErrBadCommand, c.Kind)}
	}
	if g, ok := m.groups[c.Group]; ok {
		r.Group = g.clone()
	}
	return r
}

// register adds a broker or updates a known broker's addresses. A broker without an id
// whose address is already a member's gets that member's id back (a retried request, or
// a broker that lost its id file), its HA address updated. When the broker is the
// group's master and registers after a start quoting the current master epoch
// (Command.MasterEpoch), the group is marked MasterRestarted.
func (m *Machine) register(c Command) Result {
	g, ok := m.groups[c.Group]
	want := Member{Addr: c.Addr, HAAddr: c.HAAddr}
	var r Result
	switch {
	case c.BrokerID != NoBroker:
		if !ok {
			return Result{Err: fmt.Errorf("%w: %q", ErrUnknownGroup, c.Group)}
		}
		old, member := g.Members[c.BrokerID]
		if !member {
			return Result{Err: fmt.Errorf("%w: %d in %q", ErrUnknownBroker, c.BrokerID, c.Group)}
		}
		r.BrokerID = c.BrokerID
		if old != want {
			for id, mb := range g.Members {
				if mb.Addr == c.Addr && id != c.BrokerID {
					return Result{Err: fmt.Errorf("%w: %s is broker %d", ErrAddressInUse, c.Addr, id)}
				}
			}
			g.Members[c.BrokerID] = want
			r.Changed = true
		}
	default:
		if !ok {
			g = &Group{Name: c.Group, Members: make(map[int64]Member), NextID: 1}
			m.groups[c.Group] = g
		}
		r.BrokerID = NoBroker
		for id, mb := range g.Members {
			if mb.Addr == c.Addr {
				r.BrokerID = id
				if mb != want {
					g.Members[id] = want
					r.Changed = true
				}
				break
			}
		}
		if r.BrokerID == NoBroker {
			r.BrokerID = g.NextID
			g.NextID++
			g.Members[r.BrokerID] = want
			r.Changed = true
		}
	}
	// A master epoch the broker may have served (it is in its epoch file) is one it
	// must not serve again after the start. A retried registration that finds a newer
	// epoch (the re-election happened) changes nothing.
	if r.BrokerID == g.Master && g.Master != NoBroker && !g.MasterRestarted &&
		c.MasterEpoch > 0 && c.MasterEpoch >= g.MasterEpoch {
		g.MasterRestarted = true
		r.Changed = true
	}
	return r
}

// elect chooses a master among the alive brokers: from the SyncStateSet (from every
// member before the group's first election, or with Unclean when no member of the set
// is alive), the one with the highest (epoch, offset), the lowest id on a tie. The
// master stays when it is alive and eligible, unless another broker is designated or
// the group is MasterRestarted: then the alive master is a candidate like the others
// and wins a tie (it is re-elected at a new epoch unless a replica holds more).
//
// An election quoting a master epoch (Command.MasterEpoch) that is no longer current is
// refused ErrStaleEpoch — unless what it asked for has happened: the designated broker
// (any broker, when none was designated) is the master at a newer epoch. That answer,
// success without a change, is what a client retrying an election whose first attempt
// was applied (its answer lost to a change of Raft leader) gets.
func (m *Machine) elect(c Command) Result {
	g, ok := m.groups[c.Group]
	if !ok {
		return Result{Err: fmt.Errorf("%w: %q", ErrUnknownGroup, c.Group)}
	}
	if c.MasterEpoch != 0 && c.MasterEpoch != g.MasterEpoch {
		done := g.MasterEpoch > c.MasterEpoch && g.Master != NoBroker &&
			(c.BrokerID == NoBroker || c.BrokerID == g.Master)
		if done {
			return Result{BrokerID: g.Master}
		}
		return Result{Err: fmt.Errorf("%w: election from epoch %d, current %d (master %d)",
			ErrStaleEpoch, c.MasterEpoch, g.MasterEpoch, g.Master)}
	}
	first := g.MasterEpoch == 0
	restart := g.MasterRestarted && g.Master != NoBroker
	var clean, all []Replica
	for _, r := range c.Alive {
		if _, member := g.Members[r.ID]; !member || slices.ContainsFunc(all, func(o Replica) bool { return o.ID == r.ID }) {
			continue
		}
		all = append(all, r)
		if first || g.inSet(r.ID) {
			clean = append(clean, r)
		}
	}
	candidates := clean
	if len(candidates) == 0 && c.Unclean {
		candidates = all
	}
	has := func(id int64) bool {
		return slices.ContainsFunc(candidates, func(r Replica) bool { return r.ID == id })
	}
	if !restart && g.Master != NoBroker && has(g.Master) && (c.BrokerID == NoBroker || c.BrokerID == g.Master) {
		return Result{Err: fmt.Errorf("%w: broker %d at epoch %d", ErrMasterAlive, g.Master, g.MasterEpoch), BrokerID: g.Master}
	}
	pick := NoBroker
	if c.BrokerID != NoBroker {
		if !has(c.BrokerID) {
			return Result{Err: fmt.Errorf("%w: broker %d", ErrNotEligible, c.BrokerID)}
		}
		pick = c.BrokerID
	} else if len(candidates) > 0 {
		// better reports whether r beats best: a higher (epoch, offset); on a tie the
		// restarted master, then the lower id.
		better := func(r, best Replica) bool {
			if r.Epoch != best.Epoch {
				return r.Epoch > best.Epoch
			}
			if r.Offset != best.Offset {
				return r.Offset > best.Offset
			}
			if restart && (r.ID == g.Master) != (best.ID == g.Master) {
				return r.ID == g.Master
			}
			return r.ID < best.ID
		}
		best := candidates[0]
		for _, r := range candidates[1:] {
			if better(r, best) {
				best = r
			}
		}
		pick = best.ID
	}
	g.MasterRestarted = false
	if pick == NoBroker {
		changed := g.Master != NoBroker
		g.Master = NoBroker
		return Result{Err: fmt.Errorf("%w in %q", ErrNoCandidate, c.Group), Changed: changed}
	}
	g.Master = pick
	g.MasterEpoch++
	g.SyncStateSet = []int64{pick}
	g.SyncStateSetEpoch++
	return Result{BrokerID: pick, Changed: true}
}

// alter replaces the SyncStateSet at the request of the current master at the current
// epochs. The leader checks before proposing that every new member is alive.
func (m *Machine) alter(c Command) Result {
	g, ok := m.groups[c.Group]
	if !ok {
		return Result{Err: fmt.Errorf("%w: %q", ErrUnknownGroup, c.Group)}
	}
	switch {
	case g.Master == NoBroker || c.BrokerID != g.Master:
		return Result{Err: fmt.Errorf("%w: broker %d, master is %d", ErrNotMaster, c.BrokerID, g.Master)}
	case c.MasterEpoch != g.MasterEpoch:
		return Result{Err: fmt.Errorf("%w: %d, current %d", ErrStaleEpoch, c.MasterEpoch, g.MasterEpoch)}
	case c.SyncStateSetEpoch != g.SyncStateSetEpoch:
		return Result{Err: fmt.Errorf("%w: %d, current %d", ErrStaleSyncStateSet, c.SyncStateSetEpoch, g.SyncStateSetEpoch)}
	}
	set := slices.Clone(c.SyncStateSet)
	slices.Sort(set)
	set = slices.Compact(set)
	for _, id := range set {
		if _, member := g.Members[id]; !member {
			return Result{Err: fmt.Errorf("%w: %d in %q", ErrUnknownBroker, id, c.Group)}
		}
	}
	if _, found := slices.BinarySearch(set, g.Master); !found {
		return Result{Err: fmt.Errorf("%w: %v without %d", ErrMasterNotInSet, set, g.Master)}
	}
	if slices.Equal(set, g.SyncStateSet) {
		return Result{Err: fmt.Errorf("%w: %v", ErrNoChange, set)}
	}
	g.SyncStateSet = set
	g.SyncStateSetEpoch++
	return Result{BrokerID: g.Master, Changed: true}
}
