package controller

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// BrokerReport is what a broker tells the controller when it registers and in every
// heartbeat.
type BrokerReport struct {
	// Cluster and Group are the broker's clusterName and brokerName.
	Cluster, Group string
	// Addr is the broker's advertised remoting address host:port.
	Addr string
	// HAAddr is the broker's HA listener address host:port.
	HAAddr string
	// BrokerID is the id the broker holds, NoBroker to be assigned one.
	BrokerID int64
	// Epoch is the last master epoch in the broker's epoch file (0: none).
	Epoch int32
	// MaxOffset is the broker's commit-log max offset.
	MaxOffset int64
	// RestartEpoch is set in the registrations of a broker that has just started (a new
	// process, or a new failover agent): the newest epoch in its epoch file, the newest
	// under which it may have served as master before. When the broker is its group's
	// master at that epoch, the controllers elect again at a new epoch (it must never
	// serve an epoch again after a start: Group.MasterRestarted). 0: none, or not a
	// start (heartbeats ignore it).
	RestartEpoch int32
}

// GroupView is a broker group's state as a controller answers it: the replicated state
// and, from the Raft leader only, each member's liveness and last reported position.
type GroupView struct {
	// Name is the group's name (brokerName).
	Name string `json:"name"`
	// Master is the master's broker id, NoBroker when none.
	Master int64 `json:"master"`
	// MasterEpoch is bumped by every election.
	MasterEpoch int32 `json:"masterEpoch"`
	// SyncStateSet lists the replicas in sync, ascending.
	SyncStateSet []int64 `json:"syncStateSet"`
	// SyncStateSetEpoch is bumped by every change of the set.
	SyncStateSetEpoch int32 `json:"syncStateSetEpoch"`
	// MasterRestarted: the master registered after a restart and the controllers are
	// about to elect again at a new epoch (Group.MasterRestarted); the master does not
	// serve meanwhile.
	MasterRestarted bool `json:"masterRestarted,omitempty"`
	// Members lists the registered brokers, ascending by ID.
	Members []MemberView `json:"members"`
}

// MemberView is one registered broker of a group.
type MemberView struct {
	// ID is the broker's assigned id.
	ID int64 `json:"id"`
	// Addr and HAAddr are the broker's remoting and HA addresses.
	Addr   string `json:"addr"`
	HAAddr string `json:"haAddr"`
	// Alive reports a heartbeat fresh at the leader (false in a follower's answer).
	Alive bool `json:"alive"`
	// Epoch and MaxOffset are what its last heartbeat reported (0 in a follower's
	// answer).
	Epoch     int32 `json:"epoch"`
	MaxOffset int64 `json:"maxOffset"`
}

// Member returns the member with the given id.
func (g GroupView) Member(id int64) (MemberView, bool) {
	for _, m := range g.Members {
		if m.ID == id {
			return m, true
		}
	}
	return MemberView{}, false
}

// Status is one controller node's view of the cluster.
type Status struct {
	// NodeID is the node that answered.
	NodeID string `json:"nodeId"`
	// State is its Raft state: Leader, Follower, Candidate or Shutdown.
	State string `json:"state"`
	// Leader is the id of the Raft leader the node knows ("" when none), LeaderRaftAddr
	// its Raft address.
	Leader         string `json:"leader"`
	LeaderRaftAddr string `json:"leaderRaftAddr"`
	// Term is the node's current Raft term.
	Term uint64 `json:"term"`
	// AppliedIndex is the last Raft log index applied to the node's state, CommitIndex
	// the last it knows committed.
	AppliedIndex uint64 `json:"appliedIndex"`
	CommitIndex  uint64 `json:"commitIndex"`
	// Nodes are the members of the Raft cluster.
	Nodes []NodeView `json:"nodes"`
	// Groups are every broker group, sorted by name (liveness only in the leader's
	// answer).
	Groups []GroupView `json:"groups"`
}

// NodeView is one controller node of the Raft configuration.
type NodeView struct {
	// ID is the node's id (controller.nodeId), RaftAddr its Raft address.
	ID       string `json:"id"`
	RaftAddr string `json:"raftAddr"`
	// Voter is false for a non-voting member.
	Voter bool `json:"voter"`
}

// viewOf is a group's state with the liveness live gives (nil: none).
func viewOf(g Group, live func(id int64) (alive bool, epoch int32, offset int64)) GroupView {
	v := GroupView{Name: g.Name, Master: g.Master, MasterEpoch: g.MasterEpoch,
		SyncStateSet: slices.Clone(g.SyncStateSet), SyncStateSetEpoch: g.SyncStateSetEpoch,
		MasterRestarted: g.MasterRestarted}
	if v.SyncStateSet == nil {
		v.SyncStateSet = []int64{}
	}
	v.Members = make([]MemberView, 0, len(g.Members))
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		m := MemberView{ID: id, Addr: g.Members[id].Addr, HAAddr: g.Members[id].HAAddr}
		if live != nil {
			m.Alive, m.Epoch, m.MaxOffset = live(id)
		}
		v.Members = append(v.Members, m)
	}
	return v
}

// The bodies are JSON (encoding/json with the field names of the tags above):
//
//	GroupView  {"name":"broker-a","master":1,"masterEpoch":3,"syncStateSet":[1,2],
//	            "syncStateSetEpoch":5,"masterRestarted":true (only when true),
//	            "members":[{"id":1,"addr":"10.0.0.1:10911",
//	            "haAddr":"10.0.0.1:10912","alive":true,"epoch":3,"maxOffset":4096}, ...]}
//	Status     {"nodeId":"n0","state":"Leader","leader":"n0","leaderRaftAddr":"...",
//	            "term":4,"appliedIndex":17,"commitIndex":17,
//	            "nodes":[{"id":"n0","raftAddr":"10.0.0.5:9877","voter":true}, ...],
//	            "groups":[GroupView, ...]}
//	alter set  {"syncStateSet":[1,2,3]}
//
// Unknown fields are ignored (a newer controller may add some). The decoders refuse a
// view whose lists break the order the encoder keeps (members ascending by id and
// unique, the SyncStateSet ascending and unique), wrapping ErrBadRequest.

// decodeGroupView decodes and checks a GroupView body.
func decodeGroupView(b []byte) (GroupView, error) {
	var v GroupView
	if err := json.Unmarshal(b, &v); err != nil {
		return GroupView{}, fmt.Errorf("%w: group view: %w", ErrBadRequest, err)
	}
	if err := v.check(); err != nil {
		return GroupView{}, err
	}
	return v, nil
}

// check verifies the orders the encoder keeps.
func (g GroupView) check() error {
	if !ascendingUnique(g.SyncStateSet) {
		return fmt.Errorf("%w: group %q: SyncStateSet %v not ascending", ErrBadRequest, g.Name, g.SyncStateSet)
	}
	for i := 1; i < len(g.Members); i++ {
		if g.Members[i].ID <= g.Members[i-1].ID {
			return fmt.Errorf("%w: group %q: members not ascending by id", ErrBadRequest, g.Name)
		}
	}
	return nil
}

// decodeStatus decodes and checks a Status body.
func decodeStatus(b []byte) (Status, error) {
	var s Status
	if err := json.Unmarshal(b, &s); err != nil {
		return Status{}, fmt.Errorf("%w: status: %w", ErrBadRequest, err)
	}
	for _, g := range s.Groups {
		if err := g.check(); err != nil {
			return Status{}, err
		}
	}
	return s, nil
}

// alterBody is CONTROLLER_ALTER_SYNC_STATE_SET's body.
type alterBody struct {
	SyncStateSet []int64 `json:"syncStateSet"`
}

// decodeAlterBody decodes the requested set (any order; the machine sorts it).
func decodeAlterBody(b []byte) ([]int64, error) {
	var a alterBody
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%w: SyncStateSet body: %w", ErrBadRequest, err)
	}
	if len(a.SyncStateSet) == 0 || len(a.SyncStateSet) > maxList {
		return nil, fmt.Errorf("%w: SyncStateSet of %d brokers", ErrBadRequest, len(a.SyncStateSet))
	}
	return a.SyncStateSet, nil
}

// ascendingUnique reports whether ids are strictly ascending.
func ascendingUnique(ids []int64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}
