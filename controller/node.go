package controller

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/rs/zerolog"
)

// ErrNotLeader is returned by Node.Apply on a node that is not the Raft leader.
var ErrNotLeader = errors.New("controller: not the Raft leader")

// Node is one controller node: a hashicorp/raft member whose FSM is a Machine, with its
// log and stable store in DataDir/raft.db (bbolt), file snapshots in DataDir/snapshots
// and a TCP transport. Every node answers State reads (possibly stale on a follower);
// only the leader applies commands.
type Node struct {
	log   zerolog.Logger
	opts  Options
	fsm   *fsm
	raft  *raft.Raft
	trans *raft.NetworkTransport
	store *raftboltdb.BoltStore
}

// Open starts a node. A node without Raft state on disk bootstraps the cluster of
// Options.Peers (every node of a new cluster does the same, with the same peers); one
// with state rejoins with what it stored.
func Open(opts Options) (n *Node, err error) {
	peers, err := opts.Validate()
	if err != nil {
		if opts.Listener != nil {
			_ = opts.Listener.Close()
		}
		return nil, err
	}
	var self Peer
	for _, p := range peers {
		if p.ID == opts.NodeID {
			self = p
		}
	}
	log := opts.Logger.With().Str("component", "controller").Str("node", opts.NodeID).Logger()
	hl := newHclog(log)
	n = &Node{log: log, opts: opts, fsm: &fsm{log: log, m: NewMachine()}}
	var closers []io.Closer
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i].Close()
			}
		}
	}()

	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", opts.RaftListen); err != nil {
			return nil, fmt.Errorf("controller: raft listen: %w", err)
		}
	}
	advertise, err := net.ResolveTCPAddr("tcp", self.Addr)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("controller: peer address %s: %w", self.Addr, err)
	}
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  &streamLayer{ln: ln, advertise: advertise},
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hl.Named("transport"),
	})
	closers = append(closers, n.trans)

	if err = os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("controller: data dir: %w", err)
	}
	n.store, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(opts.DataDir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("controller: raft store: %w", err)
	}
	closers = append(closers, n.store)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(opts.DataDir, 2, hl.Named("snapshots"))
	if err != nil {
		return nil, fmt.Errorf("controller: snapshot store: %w", err)
	}

	cfg := raft.DefaultConfig()
	cfg.LocalID = raft.ServerID(opts.NodeID)
	cfg.Logger = hl
	cfg.HeartbeatTimeout = opts.HeartbeatTimeout
	cfg.ElectionTimeout = opts.ElectionTimeout
	cfg.LeaderLeaseTimeout = opts.LeaderLeaseTimeout
	cfg.SnapshotInterval = opts.SnapshotInterval
	cfg.SnapshotThreshold = opts.SnapshotThreshold
	if opts.TrailingLogs > 0 {
		cfg.TrailingLogs = opts.TrailingLogs
	}
	if err = raft.ValidateConfig(cfg); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}

	existing, err := raft.HasExistingState(n.store, n.store, snaps)
	if err != nil {
		return nil, fmt.Errorf("controller: raft state: %w", err)
	}
	if !existing {
		var conf raft.Configuration
		for _, p := range peers {
			conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter,
				ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
		}
		if err = raft.BootstrapCluster(cfg, n.store, n.store, snaps, n.trans, conf); err != nil {
			return nil, fmt.Errorf("controller: bootstrap: %w", err)
		}
		log.Info().Int("peers", len(peers)).Msg("bootstrapped a new controller cluster")
	}
	if n.raft, err = raft.NewRaft(cfg, n.fsm, n.store, n.store, snaps, n.trans); err != nil {
		return nil, fmt.Errorf("controller: raft: %w", err)
	}
	log.Info().Str("raft", self.Addr).Msg("controller node started")
	return n, nil
}

// Close stops Raft, then closes the transport and the store, returning every error.
func (n *Node) Close() error {
	err := n.raft.Shutdown().Error()
	n.trans.CloseStreams()
	if cerr := n.trans.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("controller: transport close: %w", cerr))
	}
	if cerr := n.store.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("controller: store close: %w", cerr))
	}
	return err
}

// Apply replicates c through Raft and returns its result once applied on this node,
// the leader (ErrNotLeader elsewhere: forwarding to the leader is the caller's job). A
// Result.Err is the state machine refusing the command; the error is Raft failing.
func (n *Node) Apply(c Command) (Result, error) {
	if n.raft.State() != raft.Leader {
		return Result{}, ErrNotLeader
	}
	f := n.raft.Apply(EncodeCommand(c), n.opts.ApplyTimeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return Result{}, fmt.Errorf("%w: %w", ErrNotLeader, err)
		}
		return Result{}, fmt.Errorf("controller: apply: %w", err)
	}
	r, ok := f.Response().(Result)
	if !ok {
		return Result{}, fmt.Errorf("controller: apply: unexpected response %T", f.Response())
	}
	return r, nil
}

// State returns this node's copy of every group's state, sorted by name. On a follower
// it may lag the leader.
func (n *Node) State() []Group { return n.fsm.groups() }

// IsLeader reports whether this node is the Raft leader.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the id and Raft address of the leader this node knows, empty if none.
func (n *Node) Leader() (id, addr string) {
	a, i := n.raft.LeaderWithID()
	return string(i), string(a)
}

// AppliedIndex returns the index of the last log entry applied to this node's machine.
func (n *Node) AppliedIndex() uint64 { return n.raft.AppliedIndex() }

// CommitIndex returns the index of the last log entry this node knows to be committed.
func (n *Node) CommitIndex() uint64 { return n.raft.CommitIndex() }

// Term returns this node's current Raft term.
func (n *Node) Term() uint64 { return n.raft.CurrentTerm() }

// RaftState names this node's Raft state: Follower, Candidate, Leader or Shutdown.
func (n *Node) RaftState() string { return n.raft.State().String() }

// Group returns this node's copy of one group's state (possibly stale on a follower).
func (n *Node) Group(name string) (Group, bool) { return n.fsm.group(name) }

// DryRun returns what applying c to this node's state would return, changing nothing
// (Machine.DryRun).
func (n *Node) DryRun(c Command) Result { return n.fsm.dryRun(c) }

// Configuration returns the Raft cluster's members as this node knows them, in the
// configuration's order.
func (n *Node) Configuration() ([]NodeView, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("controller: raft configuration: %w", err)
	}
	var out []NodeView
	for _, s := range f.Configuration().Servers {
		out = append(out, NodeView{ID: string(s.ID), RaftAddr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

// Snapshot makes Raft take a snapshot now (and compact the log behind it).
func (n *Node) Snapshot() error {
	if err := n.raft.Snapshot().Error(); err != nil {
		return fmt.Errorf("controller: snapshot: %w", err)
	}
	return nil
}

// fsm applies Raft's log to a Machine.
type fsm struct {
	log zerolog.Logger
	mu  sync.Mutex
	m   *Machine
}

var _ raft.FSM = (*fsm)(nil)

// Apply applies one committed entry; the Result is what Node.Apply returns.
func (f *fsm) Apply(l *raft.Log) any {
	c, err := DecodeCommand(l.Data)
	if err != nil {
		f.log.Error().Err(err).Uint64("index", l.Index).Msg("skipping an undecodable raft entry")
		return Result{Err: err}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.Apply(c)
}

// Snapshot captures the state; Persist writes it out of the apply path.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fsmSnapshot(f.m.Snapshot()), nil
}

// Restore replaces the state with a snapshot's.
func (f *fsm) Restore(rc io.ReadCloser) error {
	data, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("controller: read snapshot: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.Restore(data)
}

func (f *fsm) groups() []Group {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.Groups()
}

func (f *fsm) group(name string) (Group, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.Group(name)
}

func (f *fsm) dryRun(c Command) Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.DryRun(c)
}

// fsmSnapshot is an encoded Machine.Snapshot.
type fsmSnapshot []byte

// Persist writes the snapshot to the sink.
func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		return errors.Join(fmt.Errorf("controller: write snapshot: %w", err), sink.Cancel())
	}
	return sink.Close()
}

// Release does nothing: the bytes are garbage collected.
func (fsmSnapshot) Release() {}

// streamLayer is the TCP raft.StreamLayer over a listener, advertising the peer address.
// It remembers the connections it accepted and closes them with the listener:
// hashicorp/raft's transport leaves the goroutines serving them running until the
// other side hangs up.
type streamLayer struct {
	ln        net.Listener
	advertise net.Addr

	mu       sync.Mutex
	closed   bool
	accepted map[net.Conn]struct{}
}

// Accept waits for the next connection from another node.
func (s *streamLayer) Accept() (net.Conn, error) {
	conn, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = conn.Close()
		return nil, net.ErrClosed
	}
	if s.accepted == nil {
		s.accepted = make(map[net.Conn]struct{})
	}
	tc := &trackedConn{Conn: conn, s: s}
	s.accepted[tc] = struct{}{}
	return tc, nil
}

// Close closes the listener and every accepted connection still open.
func (s *streamLayer) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := s.accepted
	s.accepted = nil
	s.mu.Unlock()
	err := s.ln.Close()
	for c := range conns {
		_ = c.(*trackedConn).Conn.Close()
	}
	return err
}

// Dial connects to another node.
func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	return d.Dial("tcp", string(addr))
}

// Addr is the address other nodes reach this one at.
func (s *streamLayer) Addr() net.Addr { return s.advertise }

// trackedConn is an accepted connection that leaves its stream layer's set when closed.
type trackedConn struct {
	net.Conn
	s *streamLayer
}

// Close closes the connection.
func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.accepted, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}
