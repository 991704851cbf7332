package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Server is a controller node serving brokers and tools: a Raft Node, the remoting
// handlers of wire.go, and — while the node leads — the broker liveness table and the
// election loop. Writes (registrations, heartbeats, SyncStateSet changes, elections) are
// served by the Raft leader only; a follower answers them CONTROLLER_NOT_LEADER naming
// the leader, and answers reads from its own (possibly stale) state.
type Server struct {
	opts ServerOptions
	log  zerolog.Logger
	node *Node
	rs   *remoting.Server
	live *liveness

	ctx     context.Context // cancelled by Shutdown; stops the election loop
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	started atomic.Bool
	serving atomic.Bool

	aclWatcher *acl.Watcher // the accounts file NewServer loaded (ACLFile); nil otherwise

	noCandidate map[string]int32 // group → master epoch last logged as "no candidate" (loop only)
	kick        chan struct{}    // check the groups now (capacity 1): a restarted master

	shutdown    sync.Once
	shutdownErr error
}

// NewServer validates opts, opens the Raft node (bootstrapping a new cluster on first
// start) and returns a server ready to Start.
func NewServer(opts ServerOptions) (s *Server, err error) {
	if err := opts.Validate(); err != nil {
		if opts.Raft.Listener != nil {
			_ = opts.Raft.Listener.Close()
		}
		return nil, err
	}
	if opts.Raft.Logger.GetLevel() == zerolog.Disabled {
		opts.Raft.Logger = opts.Logger
	}
	s = &Server{
		opts:        opts,
		log:         opts.Logger.With().Str("component", "controller").Str("node", opts.Raft.NodeID).Logger(),
		live:        newLiveness(opts.BrokerHeartbeatTimeout),
		noCandidate: make(map[string]int32),
		kick:        make(chan struct{}, 1),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if opts.ACL == nil && opts.ACLFile != "" {
		wo := acl.DefaultWatcherOptions()
		wo.Path, wo.Logger = opts.ACLFile, s.log
		w, err := acl.NewWatcher(wo)
		if err != nil {
			if opts.Raft.Listener != nil {
				_ = opts.Raft.Listener.Close()
			}
			return nil, fmt.Errorf("controller: %w", err)
		}
		s.aclWatcher, s.opts.ACL = w, w
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.closeACL())
		}
	}()
	if s.node, err = Open(s.opts.Raft); err != nil {
		return nil, err
	}
	ro := remoting.DefaultServerOptions()
	ro.TLS = opts.TLS
	ro.MaxFrameSize = opts.MaxFrameSize
	ro.IdleTimeout = opts.IdleTimeout
	ro.Logger = opts.Logger
	ro.Pools = []remoting.PoolOptions{{Name: remoting.DefaultPool, Workers: opts.Workers, QueueSize: 10000}}
	if s.rs, err = remoting.NewServer(ro); err != nil {
		return nil, errors.Join(fmt.Errorf("controller: %w", err), s.node.Close())
	}
	var gate *acl.Gate
	if s.opts.ACL != nil {
		gate = acl.NewGate(s.opts.ACL, s.log)
	}
	for code, h := range map[protocol.RequestCode]remoting.HandlerFunc{
		protocol.ControllerRegisterBroker:    s.handleRegister,
		protocol.BrokerHeartbeat:             s.handleHeartbeat,
		protocol.ControllerAlterSyncStateSet: s.handleAlter,
		protocol.ControllerElectMaster:       s.handleElect,
		protocol.ControllerGetReplicaInfo:    s.handleGetReplicaInfo,
		protocol.ControllerGetMetadataInfo:   s.handleGetMetadata,
	} {
		h = s.answering(h)
		if gate != nil {
			h = gate.Wrap(code, h)
		}
		if err = s.rs.Handle(int16(code), remoting.DefaultPool, h); err != nil {
			return nil, errors.Join(fmt.Errorf("controller: %w", err), s.node.Close())
		}
	}
	return s, nil
}

// closeACL stops the accounts-file watcher the server started, if any.
func (s *Server) closeACL() error {
	if s.aclWatcher == nil {
		return nil
	}
	return s.aclWatcher.Close()
}

// Node returns the server's Raft node.
func (s *Server) Node() *Node { return s.node }

// RequestCodes returns the request codes the server serves, ascending.
func (s *Server) RequestCodes() []int16 { return s.rs.Codes() }

// Start serves ln in the background and starts the election loop. The server owns ln
// from then on.
func (s *Server) Start(ln net.Listener) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("controller: already started")
	}
	if s.ctx.Err() != nil {
		return fmt.Errorf("controller: start after shutdown: %w", remoting.ErrClosed)
	}
	if err := s.rs.Start(ln); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	s.serving.Store(true)
	s.wg.Go(s.electionLoop)
	s.log.Info().Str("addr", ln.Addr().String()).Dur("brokerHeartbeatTimeout", s.opts.BrokerHeartbeatTimeout).
		Bool("electUncleanMaster", s.opts.ElectUncleanMaster).Msg("controller serving")
	return nil
}

// ListenAndStart listens on ServerOptions.Listen and calls Start.
func (s *Server) ListenAndStart() error {
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("controller: listen: %w", err)
	}
	if err := s.Start(ln); err != nil {
		_ = ln.Close()
		return err
	}
	return nil
}

// Addr returns the remoting address served, "" before Start.
func (s *Server) Addr() string {
	if !s.started.Load() {
		return ""
	}
	if a := s.rs.Addr(); a != nil {
		return a.String()
	}
	return ""
}

// Failed is closed when the server stops accepting connections on its own (see
// remoting.Server.Failed).
func (s *Server) Failed() <-chan struct{} { return s.rs.Failed() }

// ServeErr is why the server stopped accepting connections, or nil.
func (s *Server) ServeErr() error { return s.rs.ServeErr() }

// Missing names what the node lacks to serve consistently, empty when ready: the port
// served, a Raft leader known, and this node's state applied up to the commit index it
// knows.
func (s *Server) Missing() []string {
	var m []string
	if !s.serving.Load() {
		m = append(m, "controller port not served")
	}
	if id, _ := s.node.Leader(); id == "" {
		m = append(m, "no Raft leader known")
	}
	if applied, commit := s.node.AppliedIndex(), s.node.CommitIndex(); applied < commit {
		m = append(m, fmt.Sprintf("Raft log applied to %d of %d", applied, commit))
	}
	return m
}

// Shutdown stops serving (draining requests in flight until ctx ends), stops the
// election loop and closes the Raft node. Later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdown.Do(func() {
		s.cancel()
		var errs []error
		if s.started.Load() {
			if err := s.rs.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("controller: %w", err))
			}
		}
		s.wg.Wait()
		errs = append(errs, s.node.Close(), s.closeACL())
		s.shutdownErr = errors.Join(errs...)
		s.log.Info().Msg("controller stopped")
	})
	return s.shutdownErr
}

// answering adds the answering node's identity to every response of h, and turns a
// refusal into its response code (errors.go).
func (s *Server) answering(h remoting.HandlerFunc) remoting.HandlerFunc {
	return func(ctx context.Context, ch remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
		resp, err := h(ctx, ch, req)
		if err != nil {
			w, ok := wireErrorOf(err)
			if !ok {
				return nil, err // SYSTEM_ERROR with the text
			}
			resp = remoting.NewResponse(req, int16(w.code), err.Error())
			resp.SetExt(fieldError, w.name)
		}
		leader, _ := s.node.Leader()
		resp.SetExt(fieldNodeID, s.opts.Raft.NodeID)
		resp.SetExt(fieldLeaderID, leader)
		resp.SetExt(fieldIsLeader, strconv.FormatBool(s.node.IsLeader()))
		return resp, nil
	}
}

// leaderTerm returns this node's term while it leads, or ErrNotLeader naming the leader.
func (s *Server) leaderTerm() (uint64, error) {
	if !s.node.IsLeader() {
		id, addr := s.node.Leader()
		if id == "" {
			return 0, fmt.Errorf("%w: no leader elected", ErrNotLeader)
		}
		return 0, fmt.Errorf("%w: the leader is %s (raft %s)", ErrNotLeader, id, addr)
	}
	return s.node.Term(), nil
}

// view returns a group's view, with liveness when term is this node's leadership term
// (0: none).
func (s *Server) view(g Group, term uint64) GroupView {
	if term == 0 {
		return viewOf(g, nil)
	}
	now := s.opts.Clock()
	return viewOf(g, func(id int64) (bool, int32, int64) { return s.live.state(term, g.Name, id, now) })
}

// groupResponse answers req with a group's view as the body.
func groupResponse(req *remoting.Command, v GroupView) (*remoting.Command, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("controller: encode group view: %w", err)
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	resp.Body = body
	return resp, nil
}

// apply proposes c as the leader and returns the result; a Raft failure losing the
// leadership is ErrNotLeader.
func (s *Server) apply(c Command) (Result, error) {
	r, err := s.node.Apply(c)
	if err != nil {
		return Result{}, err
	}
	return r, r.Err
}

func (s *Server) handleRegister(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := fieldReader{req: req}
	r := f.report()
	if f.err != nil {
		return nil, f.err
	}
	term, err := s.leaderTerm()
	if err != nil {
		return nil, err
	}
	// A broker registering after a start: its report (and the start) are noted before
	// the registration is applied, so that a re-election of the group it triggers sees
	// the restarted broker's own log end, never the old process's last report.
	now := s.opts.Clock()
	if r.RestartEpoch > 0 {
		s.live.started(term, r.Group, now)
	}
	if g, ok := s.node.Group(r.Group); ok && r.BrokerID != NoBroker {
		if _, member := g.Members[r.BrokerID]; member {
			s.live.record(term, r.Group, r.BrokerID, r.Epoch, r.MaxOffset, now)
		}
	}
	res, err := s.apply(Command{Kind: KindRegister, Group: r.Group, BrokerID: r.BrokerID, Addr: r.Addr, HAAddr: r.HAAddr,
		MasterEpoch: r.RestartEpoch})
	if err != nil {
		return nil, err
	}
	if res.Changed {
		s.log.Info().Str("group", r.Group).Int64("brokerId", res.BrokerID).Str("addr", r.Addr).
			Str("haAddr", r.HAAddr).Int32("restartEpoch", r.RestartEpoch).Msg("broker registered")
	}
	s.live.record(term, r.Group, res.BrokerID, r.Epoch, r.MaxOffset, s.opts.Clock())
	if res.Group.MasterRestarted && res.Group.Master == res.BrokerID {
		s.log.Info().Str("group", r.Group).Int64("master", res.BrokerID).Int32("masterEpoch", res.Group.MasterEpoch).
			Int64("maxOffset", r.MaxOffset).Msg("master restarted: electing again at a new epoch")
		s.kickChecks()
	}
	resp, err := groupResponse(req, s.view(res.Group, term))
	if err != nil {
		return nil, err
	}
	resp.SetExt(fieldBrokerID, strconv.FormatInt(res.BrokerID, 10))
	return resp, nil
}

// kickChecks makes the election loop check the groups now.
func (s *Server) kickChecks() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Server) handleHeartbeat(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := fieldReader{req: req}
	r := f.report()
	if f.err == nil && r.BrokerID == NoBroker {
		f.fail("field %s: a heartbeat needs the broker's id", fieldBrokerID)
	}
	if f.err != nil {
		return nil, f.err
	}
	term, err := s.leaderTerm()
	if err != nil {
		return nil, err
	}
	g, ok := s.node.Group(r.Group)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownGroup, r.Group)
	}
	if _, member := g.Members[r.BrokerID]; !member {
		return nil, fmt.Errorf("%w: %d in %q", ErrUnknownBroker, r.BrokerID, r.Group)
	}
	s.live.record(term, r.Group, r.BrokerID, r.Epoch, r.MaxOffset, s.opts.Clock())
	if g.MasterRestarted {
		s.kickChecks() // this report may be the last the re-election waits for
	}
	resp, err := groupResponse(req, s.view(g, term))
	if err != nil {
		return nil, err
	}
	resp.SetExt(fieldBrokerID, strconv.FormatInt(r.BrokerID, 10))
	return resp, nil
}

func (s *Server) handleAlter(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := fieldReader{req: req}
	group := f.str(fieldGroup)
	master := f.int(fieldMasterID, 64)
	masterEpoch := int32(f.int(fieldMasterEpoch, 32))
	setEpoch := int32(f.int(fieldSetEpoch, 32))
	if f.err != nil {
		return nil, f.err
	}
	set, err := decodeAlterBody(req.Body)
	if err != nil {
		return nil, err
	}
	term, err := s.leaderTerm()
	if err != nil {
		return nil, err
	}
	g, ok := s.node.Group(group)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownGroup, group)
	}
	c := Command{Kind: KindAlterSyncStateSet, Group: group, BrokerID: master,
		MasterEpoch: masterEpoch, SyncStateSetEpoch: setEpoch, SyncStateSet: set}
	if dry := s.node.DryRun(c); dry.Err != nil {
		return nil, dry.Err // the machine's refusal (master, epochs, members) comes first
	}
	// A broker joins the set only while the leader sees it alive.
	now := s.opts.Clock()
	for _, id := range set {
		if _, member := g.Members[id]; !member || g.inSet(id) {
			continue
		}
		if alive, _, _ := s.live.state(term, group, id, now); !alive {
			return nil, fmt.Errorf("%w: broker %d of %q has no heartbeat within %v", ErrBrokerNotAlive, id, group, s.opts.BrokerHeartbeatTimeout)
		}
	}
	res, err := s.apply(c)
	if err != nil {
		return nil, err
	}
	s.log.Info().Str("group", group).Int64("master", master).Ints64("syncStateSet", res.Group.SyncStateSet).
		Int32("syncStateSetEpoch", res.Group.SyncStateSetEpoch).Msg("SyncStateSet changed")
	return groupResponse(req, s.view(res.Group, term))
}

func (s *Server) handleElect(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := fieldReader{req: req}
	group := f.str(fieldGroup)
	designated := f.int(fieldBrokerID, 64)
	from := int32(f.optInt(fieldMasterEpoch, 32))
	if f.err != nil {
		return nil, f.err
	}
	term, err := s.leaderTerm()
	if err != nil {
		return nil, err
	}
	// No dry run: an election retried after a change of leader must be ordered after
	// its first attempt, which may still be on its way through the log.
	alive := s.live.alive(term, group, s.opts.Clock())
	res, err := s.apply(Command{Kind: KindElect, Group: group, BrokerID: designated, Alive: alive,
		Unclean: s.opts.ElectUncleanMaster, MasterEpoch: from})
	if err != nil {
		return nil, err
	}
	if res.Changed {
		s.log.Info().Str("group", group).Int64("master", res.BrokerID).Int32("masterEpoch", res.Group.MasterEpoch).
			Int64("designated", designated).Msg("master elected on request")
	} else {
		s.log.Info().Str("group", group).Int64("master", res.BrokerID).Int32("masterEpoch", res.Group.MasterEpoch).
			Int32("from", from).Msg("election on request already done")
	}
	return groupResponse(req, s.view(res.Group, term))
}

func (s *Server) handleGetReplicaInfo(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := fieldReader{req: req}
	group := f.str(fieldGroup)
	if f.err != nil {
		return nil, f.err
	}
	g, ok := s.node.Group(group)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownGroup, group)
	}
	term, err := s.leaderTerm()
	if err != nil {
		term = 0 // a follower answers without liveness
	}
	return groupResponse(req, s.view(g, term))
}

func (s *Server) handleGetMetadata(_ context.Context, _ remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	st, err := s.Status()
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("controller: encode status: %w", err)
	}
	resp := remoting.NewResponse(req, int16(protocol.Success), "")
	resp.Body = body
	return resp, nil
}

// Status returns this node's view: its Raft state, the cluster's nodes and every group
// (with liveness while it leads).
func (s *Server) Status() (Status, error) {
	nodes, err := s.node.Configuration()
	if err != nil {
		return Status{}, err
	}
	term, lerr := s.leaderTerm()
	if lerr != nil {
		term = 0
	}
	leader, leaderAddr := s.node.Leader()
	st := Status{NodeID: s.opts.Raft.NodeID, State: s.node.RaftState(), Leader: leader, LeaderRaftAddr: leaderAddr,
		Term: s.node.Term(), AppliedIndex: s.node.AppliedIndex(), CommitIndex: s.node.CommitIndex(),
		Nodes: nodes, Groups: []GroupView{}}
	for _, g := range s.node.State() {
		st.Groups = append(st.Groups, s.view(g, term))
	}
	return st, nil
}

// electionLoop checks every CheckInterval, while this node leads, whether a group needs
// a master, until Shutdown.
func (s *Server) electionLoop() {
	t := time.NewTicker(s.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.checkGroups()
		case <-s.kick:
			s.checkGroups()
		}
	}
}

// checkGroups proposes an election for every group whose master's heartbeat lapsed or
// that has no master while a member is alive — once this node has led for one heartbeat
// timeout (before that a silent broker may just not have found the new leader yet) —
// and for every group whose master restarted (MasterRestarted) once the leader knows
// where each member of the SyncStateSet stands since (liveness.settled). A dry run
// first keeps checks that would change nothing out of the Raft log.
func (s *Server) checkGroups() {
	if !s.node.IsLeader() {
		return
	}
	term, now := s.node.Term(), s.opts.Clock()
	grace := s.live.inGrace(term, now)
	for _, g := range s.node.State() {
		alive := s.live.alive(term, g.Name, now)
		masterAlive := g.Master != NoBroker && slices.ContainsFunc(alive, func(r Replica) bool { return r.ID == g.Master })
		switch {
		case g.MasterRestarted && masterAlive:
			if !s.live.settled(term, g.Name, g.SyncStateSet, now) {
				continue
			}
		case grace, masterAlive, g.Master == NoBroker && len(alive) == 0:
			continue
		}
		c := Command{Kind: KindElect, Group: g.Name, Alive: alive, Unclean: s.opts.ElectUncleanMaster}
		dry := s.node.DryRun(c)
		if !dry.Changed {
			if errors.Is(dry.Err, ErrNoCandidate) && s.noCandidate[g.Name] != g.MasterEpoch+1 {
				s.noCandidate[g.Name] = g.MasterEpoch + 1
				s.log.Warn().Str("group", g.Name).Int32("masterEpoch", g.MasterEpoch).Ints64("syncStateSet", g.SyncStateSet).
					Int("alive", len(alive)).Bool("electUncleanMaster", s.opts.ElectUncleanMaster).
					Msg("group has no master and no eligible broker is alive")
			}
			continue
		}
		res, err := s.node.Apply(c)
		switch {
		case err != nil:
			s.log.Warn().Err(err).Str("group", g.Name).Msg("election not applied")
			return // most likely no longer the leader
		case res.Err != nil:
			s.noCandidate[g.Name] = res.Group.MasterEpoch + 1
			s.log.Warn().Str("group", g.Name).Int64("oldMaster", g.Master).Int32("masterEpoch", res.Group.MasterEpoch).
				Err(res.Err).Msg("master lost; no eligible broker to elect")
		default:
			delete(s.noCandidate, g.Name)
			s.log.Info().Str("group", g.Name).Int64("oldMaster", g.Master).Int64("master", res.BrokerID).
				Int32("masterEpoch", res.Group.MasterEpoch).Bool("masterRestarted", g.MasterRestarted).
				Interface("alive", alive).Msg("master elected")
		}
	}
}
