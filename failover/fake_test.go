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
// registers, and elects whom the test says. It checks what a master quotes when it
// changes the SyncStateSet, as the real state machine does.
type fakeController struct {
	mu         sync.Mutex
	view       controller.GroupView
	nextID     int64
	cut        map[int64]bool // brokers that cannot reach the controllers
	heartbeats map[int64]int
	reports    map[int64]controller.BrokerReport
	registered []controller.BrokerReport // every registration, in order
}

func newFakeController(group string) *fakeController {
	return &fakeController{view: controller.GroupView{Name: group, SyncStateSet: []int64{}}, nextID: 1,
		cut: map[int64]bool{}, heartbeats: map[int64]int{}, reports: map[int64]controller.BrokerReport{}}
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
	if f.view.Master == controller.NoBroker {
		f.electLocked(r.BrokerID)
	}
	return r.BrokerID, f.copyLocked(), nil
}

func (l *fakeLink) Heartbeat(_ context.Context, r controller.BrokerReport) (controller.GroupView, error) {
	f := l.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cut[r.BrokerID] {
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

func (l *fakeLink) Close() error {
	l.closed = true
	return nil
}
