package failover

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ferrymq/ferry/controller"
)

// errUnreachable is what the fake answers a broker cut off from the controllers.
var errUnreachable = errors.New("fake controller: unreachable")

// fakeController is one broker group's controller state in memory, shared by the agents
// of a test (each through its own fakeLink): it assigns ids, elects the first broker that
// registers, elects whom the test says, and elects a master that registers after a
// restart again at a new epoch (at once: the real controllers compare logs first). It
// checks what a master quotes when it changes the SyncStateSet or asks for an election,
// as the real state machine does. A broker is alive from its registration until its
// agent closes its link.
type fakeController struct {
	mu         sync.Mutex
	view       controller.GroupView
	nextID     int64
	cut        map[int64]bool // brokers that cannot reach the controllers
	heartbeats map[int64]int
	refused    map[int64]int // heartbeats refused because the broker is cut off
	reports    map[int64]controller.BrokerReport
	registered []controller.BrokerReport // every registration, in order
	noReelect  bool                      // a restarted master is not elected again
	elections  []int64                   // the brokers ElectFrom asked for, in order
}

func newFakeController(group string) *fakeController {
	return &fakeController{view: controller.GroupView{Name: group, SyncStateSet: []int64{}}, nextID: 1,
		cut: map[int64]bool{}, heartbeats: map[int64]int{}, refused: map[int64]int{}, reports: map[int64]controller.BrokerReport{}}
}

// link returns a client of the fake for one agent.
func (f *fakeController) link() *fakeLink { return &fakeLink{f: f} }

// elect makes id the master with a new epoch and a SyncStateSet of itself.
func (f *fakeController) elect(id int64) controller.GroupView {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.electLocked(id)
	return f.copyLocked()
}

func (f *fakeController) electLocked(id int64) {
	f.view.Master = id
	f.view.MasterEpoch++
	f.view.SyncStateSet = []int64{id}
	f.view.SyncStateSetEpoch++
}

// setCut cuts broker id off the controllers (or reconnects it).
func (f *fakeController) setCut(id int64, cut bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cut[id] = cut
}

// heartbeatsOf counts the heartbeats broker id sent.
func (f *fakeController) heartbeatsOf(id int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.heartbeats[id]
}

// refusedOf counts the heartbeats of broker id refused while it was cut off.
func (f *fakeController) refusedOf(id int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused[id]
}

// registrations returns every registration so far.
func (f *fakeController) registrations() []controller.BrokerReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.registered)
}

func (f *fakeController) copyLocked() controller.GroupView {
	v := f.view
	v.SyncStateSet = slices.Clone(v.SyncStateSet)
	v.Members = slices.Clone(v.Members)
	return v
}

// setNoReelect makes the fake ignore a restarted master's registration (as controllers
// that do not know RestartEpoch would).
func (f *fakeController) setNoReelect(v bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noReelect = v
}

// electionsAsked returns the brokers agents asked to elect (ElectFrom), in order.
func (f *fakeController) electionsAsked() []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.elections)
}

// group returns the group's state.
func (f *fakeController) group() controller.GroupView {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.copyLocked()
}

// member adds or updates a member from a report.
func (f *fakeController) memberLocked(r controller.BrokerReport) {
	m := controller.MemberView{ID: r.BrokerID, Addr: r.Addr, HAAddr: r.HAAddr, Alive: true, Epoch: r.Epoch, MaxOffset: r.MaxOffset}
	i, found := slices.BinarySearchFunc(f.view.Members, r.BrokerID, func(m controller.MemberView, id int64) int {
		return int(m.ID - id)
	})
	if found {
		f.view.Members[i] = m
	} else {
		f.view.Members = slices.Insert(f.view.Members, i, m)
	}
	f.reports[r.BrokerID] = r
}

// fakeLink is one agent's client of a fakeController.
type fakeLink struct {
	f      *fakeController
	id     int64 // the broker's id once registered
	closed bool
}

func (l *fakeLink) Register(_ context.Context, r controller.BrokerReport) (int64, controller.GroupView, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut[r.BrokerID] {
		return 0, controller.GroupView{}, errUnreachable
	}
	f.registered = append(f.registered, r)
	if r.BrokerID == controller.NoBroker {
		r.BrokerID = f.nextID
		f.nextID++
	} else if _, ok := f.view.Member(r.BrokerID); !ok {
		return 0, controller.GroupView{}, fmt.Errorf("%w: %d", controller.ErrUnknownBroker, r.BrokerID)
	}
	f.memberLocked(r)
	l.id = r.BrokerID
	switch {
	case f.view.Master == controller.NoBroker:
		f.electLocked(r.BrokerID)
	case f.view.Master == r.BrokerID && r.RestartEpoch >= f.view.MasterEpoch && !f.noReelect:
		f.electLocked(r.BrokerID)
	}
	return r.BrokerID, f.copyLocked(), nil
}

func (l *fakeLink) Heartbeat(_ context.Context, r controller.BrokerReport) (controller.GroupView, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut[r.BrokerID] {
		f.refused[r.BrokerID]++
		return controller.GroupView{}, errUnreachable
	}
	if _, ok := f.view.Member(r.BrokerID); !ok {
		return controller.GroupView{}, fmt.Errorf("%w: %d", controller.ErrUnknownBroker, r.BrokerID)
	}
	f.heartbeats[r.BrokerID]++
	f.memberLocked(r)
	return f.copyLocked(), nil
}

func (l *fakeLink) AlterSyncStateSet(_ context.Context, group string, masterID int64, masterEpoch, setEpoch int32,
	set []int64) (controller.GroupView, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.cut[masterID]:
		return controller.GroupView{}, errUnreachable
	case group != f.view.Name:
		return controller.GroupView{}, controller.ErrUnknownGroup
	case masterID != f.view.Master:
		return controller.GroupView{}, controller.ErrNotMaster
	case masterEpoch != f.view.MasterEpoch:
		return controller.GroupView{}, controller.ErrStaleEpoch
	case setEpoch != f.view.SyncStateSetEpoch:
		return controller.GroupView{}, controller.ErrStaleSyncStateSet
	}
	f.view.SyncStateSet = slices.Sorted(slices.Values(set))
	f.view.SyncStateSetEpoch++
	return f.copyLocked(), nil
}

func (l *fakeLink) ElectFrom(_ context.Context, group string, id int64, masterEpoch int32) (controller.GroupView, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut[l.id] {
		return controller.GroupView{}, errUnreachable
	}
	f.elections = append(f.elections, id)
	v := f.view
	switch {
	case group != v.Name:
		return controller.GroupView{}, controller.ErrUnknownGroup
	case masterEpoch != v.MasterEpoch && masterEpoch > 0:
		if v.MasterEpoch > masterEpoch && v.Master == id {
			return f.copyLocked(), nil
		}
		return controller.GroupView{}, controller.ErrStaleEpoch
	case id == v.Master:
		return controller.GroupView{}, controller.ErrMasterAlive
	}
	m, ok := v.Member(id)
	if !ok || !m.Alive || !slices.Contains(v.SyncStateSet, id) {
		return controller.GroupView{}, controller.ErrNotEligible
	}
	f.electLocked(id)
	return f.copyLocked(), nil
}

// Close ends the link: its broker is no longer alive.
func (l *fakeLink) Close() error {
	l.closed = true
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.view.Members {
		if m.ID == l.id {
			f.view.Members[i].Alive = false
		}
	}
	return nil
}
