package controller

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// ErrBadOptions is wrapped by every error of Options.Validate.
var ErrBadOptions = errors.New("controller: bad options")

// Peer is one controller node of the Raft cluster.
type Peer struct {
	// ID is the node's id (controller.nodeId).
	ID string
	// Addr is the node's Raft address, host:port.
	Addr string
}

// ParsePeer parses "nodeId@host:raftPort".
func ParsePeer(s string) (Peer, error) {
	id, addr, ok := strings.Cut(s, "@")
	if !ok || id == "" {
		return Peer{}, fmt.Errorf("%w: peer %q is not nodeId@host:port", ErrBadOptions, s)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return Peer{}, fmt.Errorf("%w: peer %q: %w", ErrBadOptions, s, err)
	}
	return Peer{ID: id, Addr: addr}, nil
}

// Options configure a Node.
type Options struct {
	// NodeID is this node's id; it must be one of Peers.
	NodeID string
	// RaftListen is the host:port the Raft transport listens on.
	RaftListen string
	// Listener, when set, is used instead of listening on RaftListen (tests listen on
	// 127.0.0.1:0 first to learn their ports). The node closes it.
	Listener net.Listener
	// Peers lists every node of the cluster, this one included, as nodeId@host:raftPort.
	// A new cluster is bootstrapped with exactly these members; three nodes tolerate one
	// failure.
	Peers []string
	// DataDir holds the Raft log and stable store (raft.db) and the snapshots.
	DataDir string
	// HeartbeatTimeout and ElectionTimeout are Raft's (a follower that hears nothing from
	// the leader for that long starts an election); LeaderLeaseTimeout is how long a
	// leader stays leader without reaching a quorum (at most HeartbeatTimeout).
	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout time.Duration
	// ApplyTimeout bounds Node.Apply.
	ApplyTimeout time.Duration
	// SnapshotInterval is how often Raft checks whether to snapshot, and
	// SnapshotThreshold how many new log entries make it do so; TrailingLogs are kept
	// after a snapshot for slow followers (behind them a follower gets the snapshot).
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// Logger receives the node's and Raft's log lines.
	Logger zerolog.Logger
}

// DefaultOptions returns the defaults; NodeID, RaftListen, Peers and DataDir must be set.
func DefaultOptions() Options {
	return Options{
		HeartbeatTimeout:   time.Second,
		ElectionTimeout:    time.Second,
		LeaderLeaseTimeout: 500 * time.Millisecond,
		ApplyTimeout:       5 * time.Second,
		SnapshotInterval:   2 * time.Minute,
		SnapshotThreshold:  8192,
		TrailingLogs:       10240,
		Logger:             zerolog.Nop(),
	}
}

// Validate checks the options and returns the parsed peers; errors wrap ErrBadOptions.
func (o Options) Validate() ([]Peer, error) {
	bad := func(format string, args ...any) ([]Peer, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{ErrBadOptions}, args...)...)
	}
	if o.NodeID == "" {
		return bad("nodeId is empty")
	}
	if o.Listener == nil {
		if _, _, err := net.SplitHostPort(o.RaftListen); err != nil {
			return bad("raftListen %q: %v", o.RaftListen, err)
		}
	}
	if o.DataDir == "" {
		return bad("dataDir is empty")
	}
	if o.HeartbeatTimeout < 5*time.Millisecond || o.ElectionTimeout < 5*time.Millisecond ||
		o.LeaderLeaseTimeout < 5*time.Millisecond || o.LeaderLeaseTimeout > o.HeartbeatTimeout {
		return bad("timeouts: heartbeat %v, election %v, leader lease %v (each ≥ 5ms, lease ≤ heartbeat)",
			o.HeartbeatTimeout, o.ElectionTimeout, o.LeaderLeaseTimeout)
	}
	if o.ApplyTimeout <= 0 || o.SnapshotInterval < 5*time.Millisecond || o.SnapshotThreshold == 0 {
		return bad("apply timeout %v, snapshot interval %v and threshold %d must be positive",
			o.ApplyTimeout, o.SnapshotInterval, o.SnapshotThreshold)
	}
	if len(o.Peers) == 0 {
		return bad("peers is empty")
	}
	peers := make([]Peer, 0, len(o.Peers))
	ids, addrs := map[string]bool{}, map[string]bool{}
	for _, s := range o.Peers {
		p, err := ParsePeer(s)
		if err != nil {
			return nil, err
		}
		if ids[p.ID] || addrs[p.Addr] {
			return bad("peer %q repeats an id or address", s)
		}
		ids[p.ID], addrs[p.Addr] = true, true
		peers = append(peers, p)
	}
	if !ids[o.NodeID] {
		return bad("nodeId %q is not among the peers", o.NodeID)
	}
	return peers, nil
}
