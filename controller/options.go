package controller

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/remoting"
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

// ServerOptions configure a Server: the Raft node it runs and the remoting port brokers
// and tools reach it on. The ferry command fills it from the "controller" configuration
// section (package launch).
type ServerOptions struct {
	// Raft configures the Raft node (its id, address, peers and data directory).
	Raft Options
	// Listen is the remoting address ListenAndStart listens on (controller.listen).
	// Default "127.0.0.1:9878".
	Listen string
	// BrokerHeartbeatTimeout is how long a broker stays alive after its last heartbeat:
	// a master silent that long is replaced. Default 3 s.
	BrokerHeartbeatTimeout time.Duration
	// ElectUncleanMaster lets an election pick a broker outside the SyncStateSet when
	// no member of the set is alive (acknowledged messages may be lost). Default false.
	ElectUncleanMaster bool
	// CheckInterval is how often the leader looks for groups to elect a master in;
	// shorter than BrokerHeartbeatTimeout. Default 500 ms.
	CheckInterval time.Duration
	// MaxFrameSize bounds the frames accepted. Default 16 MiB.
	MaxFrameSize int
	// IdleTimeout closes connections that carried nothing for this long. Default 120 s.
	IdleTimeout time.Duration
	// Workers is the number of request workers. Default 8.
	Workers int
	// ACL, when set, checks every request before it is served: every controller code
	// needs an admin account (acl.Rules). nil: no access control, unless ACLFile is set.
	ACL acl.Checker
	// ACLFile, when set and ACL is nil, is an accounts file the server loads (NewServer
	// fails on a bad file) and re-reads when it changes.
	ACLFile string
	// TLS, when set and not disabled, serves TLS on the remoting port (permissive or
	// enforcing). nil: plain only.
	TLS *remoting.TLSConfig
	// Logger receives the server's logs (Raft's too, unless Raft.Logger is set).
	Logger zerolog.Logger
	// Clock returns the current time. Default time.Now.
	Clock func() time.Time
}

// DefaultServerOptions returns the defaults; Raft's NodeID, RaftListen, Peers and
// DataDir must be set.
func DefaultServerOptions() ServerOptions {
	return ServerOptions{
		Raft:                   DefaultOptions(),
		Listen:                 "127.0.0.1:9878",
		BrokerHeartbeatTimeout: 3 * time.Second,
		CheckInterval:          500 * time.Millisecond,
		MaxFrameSize:           remoting.DefaultMaxFrameSize,
		IdleTimeout:            120 * time.Second,
		Workers:                8,
		Logger:                 zerolog.Nop(),
		Clock:                  time.Now,
	}
}

// Validate checks the options (the Raft node's included); errors wrap ErrBadOptions.
func (o ServerOptions) Validate() error {
	if _, err := o.Raft.Validate(); err != nil {
		return err
	}
	switch {
	case o.BrokerHeartbeatTimeout <= 0:
		return fmt.Errorf("%w: brokerHeartbeatTimeout %v must be positive", ErrBadOptions, o.BrokerHeartbeatTimeout)
	case o.CheckInterval <= 0 || o.CheckInterval >= o.BrokerHeartbeatTimeout:
		return fmt.Errorf("%w: check interval %v must be positive and shorter than brokerHeartbeatTimeout %v",
			ErrBadOptions, o.CheckInterval, o.BrokerHeartbeatTimeout)
	case o.MaxFrameSize <= 0, o.IdleTimeout <= 0, o.Workers <= 0:
		return fmt.Errorf("%w: max frame size %d, idle timeout %v and workers %d must be positive",
			ErrBadOptions, o.MaxFrameSize, o.IdleTimeout, o.Workers)
	case o.Clock == nil:
		return fmt.Errorf("%w: no clock", ErrBadOptions)
	}
	return nil
}
