package controller

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
)

// Byte layouts of the Raft log entries (commands) and of the snapshots. Integers are
// varints (encoding/binary: zig-zag for signed, plain for counts and lengths, written
// "uv"); a string is uv length then bytes; a bool is one byte 0 or 1.
//
// Command, version 2 (what EncodeCommand writes):
//
//	version  byte = 2
//	kind     byte (1 register, 2 elect, 3 alter SyncStateSet)
//	group    string
//	brokerID varint
//	addr     string
//	haAddr   string
//	alive    uv count, then per replica: id varint, epoch varint, offset varint
//	unclean  bool
//	masterEpoch, syncStateSetEpoch varint
//	set      uv count, then ids varint
//
// Command version 1 is version 2 without haAddr (read as empty); logs written before
// members had HA addresses still replay.
//
// The command's masterEpoch is read per kind (Command.MasterEpoch): the epoch quoted by
// an alter-SyncStateSet request, the epoch an election replaces, or the epoch a broker
// registering after a start may have served. Commands of versions 1 and 2 written before
// elections and registrations quoted one carry 0 there: "none", as they meant.
//
// Snapshot, version 3 (groups sorted by name, members by id):
//
//	version  byte = 3
//	groups   uv count, then per group:
//	  name string, nextID varint, master varint, masterEpoch varint,
//	  syncStateSetEpoch varint,
//	  members uv count, then id varint, addr string, haAddr string
//	  set     uv count, then ids varint
//	  masterRestarted bool
//
// Snapshot version 2 is version 3 without masterRestarted (read as false), version 1 is
// version 2 without the members' haAddr.
//
// A decoder refuses an unknown version, trailing bytes, strings over maxString bytes and
// lists over maxList entries.
const (
	commandVersion  = 2
	snapshotVersion = 3
	maxString       = 1 << 12
	maxList         = 1 << 12
)

// encoder appends to a byte slice.
type encoder struct{ b []byte }

func (e *encoder) byte(v byte)   { e.b = append(e.b, v) }
func (e *encoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) bool(v bool) {
	if v {
		e.byte(1)
	} else {
		e.byte(0)
	}
}
func (e *encoder) ids(v []int64) {
	e.uint(uint64(len(v)))
	for _, id := range v {
		e.int(id)
	}
}

// decoder reads what encoder wrote; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrBadCommand}, args...)...)
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail("truncated")
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int32() int32 {
	v := d.int()
	if v != int64(int32(v)) {
		d.fail("epoch %d out of range", v)
	}
	return int32(v)
}

func (d *decoder) count(limit uint64) int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad length")
		return 0
	}
	if v > limit {
		d.fail("length %d over %d", v, limit)
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *decoder) str() string {
	n := d.count(maxString)
	if d.err != nil {
		return ""
	}
	if n > len(d.b) {
		d.fail("truncated string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) bool() bool {
	switch v := d.byte(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("bool byte %d", v)
		return false
	}
}

func (d *decoder) ids() []int64 {
	n := d.count(maxList)
	if n == 0 {
		return nil
	}
	out := make([]int64, 0, min(n, len(d.b)))
	for range n {
		out = append(out, d.int())
	}
	return out
}

func (d *decoder) end() {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
}

// EncodeCommand returns c's version-2 encoding.
func EncodeCommand(c Command) []byte {
	e := encoder{b: make([]byte, 0, 64)}
	e.byte(commandVersion)
	e.byte(byte(c.Kind))
	e.str(c.Group)
	e.int(c.BrokerID)
	e.str(c.Addr)
	e.str(c.HAAddr)
	e.uint(uint64(len(c.Alive)))
	for _, r := range c.Alive {
		e.int(r.ID)
		e.int(int64(r.Epoch))
		e.int(r.Offset)
	}
	e.bool(c.Unclean)
	e.int(int64(c.MasterEpoch))
	e.int(int64(c.SyncStateSetEpoch))
	e.ids(c.SyncStateSet)
	return e.b
}

// DecodeCommand decodes an EncodeCommand encoding, or a version-1 one; errors wrap
// ErrBadCommand.
func DecodeCommand(b []byte) (Command, error) {
	d := decoder{b: b}
	version := d.byte()
	if d.err == nil && version != 1 && version != commandVersion {
		d.fail("command version %d", version)
	}
	var c Command
	c.Kind = Kind(d.byte())
	if d.err == nil && (c.Kind < KindRegister || c.Kind > KindAlterSyncStateSet) {
		d.fail("kind %d", c.Kind)
	}
	c.Group = d.str()
	c.BrokerID = d.int()
	c.Addr = d.str()
	if version >= 2 {
		c.HAAddr = d.str()
	}
	if n := d.count(maxList); n > 0 {
		c.Alive = make([]Replica, 0, min(n, len(d.b)))
		for range n {
			c.Alive = append(c.Alive, Replica{ID: d.int(), Epoch: d.int32(), Offset: d.int()})
		}
	}
	c.Unclean = d.bool()
	c.MasterEpoch = d.int32()
	c.SyncStateSetEpoch = d.int32()
	c.SyncStateSet = d.ids()
	d.end()
	if d.err != nil {
		return Command{}, d.err
	}
	return c, nil
}

// Snapshot returns the whole state in the version-3 snapshot layout.
func (m *Machine) Snapshot() []byte {
	e := encoder{}
	e.byte(snapshotVersion)
	e.uint(uint64(len(m.groups)))
	for _, name := range slices.Sorted(maps.Keys(m.groups)) {
		g := m.groups[name]
		e.str(g.Name)
		e.int(g.NextID)
		e.int(g.Master)
		e.int(int64(g.MasterEpoch))
		e.int(int64(g.SyncStateSetEpoch))
		e.uint(uint64(len(g.Members)))
		for _, id := range slices.Sorted(maps.Keys(g.Members)) {
			e.int(id)
			e.str(g.Members[id].Addr)
			e.str(g.Members[id].HAAddr)
		}
		e.ids(g.SyncStateSet)
		e.bool(g.MasterRestarted)
	}
	return e.b
}

// Restore replaces the whole state with a Snapshot encoding (or a version-1 or -2 one).
// On error (wrapping ErrBadCommand) the machine is unchanged.
func (m *Machine) Restore(b []byte) error {
	d := decoder{b: b}
	version := d.byte()
	if d.err == nil && (version < 1 || version > snapshotVersion) {
		d.fail("snapshot version %d", version)
	}
	groups := make(map[string]*Group)
	n := d.count(1 << 20)
	for i := 0; i < n && d.err == nil; i++ {
		g := &Group{Name: d.str(), NextID: d.int(), Master: d.int(), MasterEpoch: d.int32(),
			SyncStateSetEpoch: d.int32(), Members: make(map[int64]Member)}
		members := d.count(maxList)
		for range members {
			id := d.int()
			mb := Member{Addr: d.str()}
			if version >= 2 {
				mb.HAAddr = d.str()
			}
			if _, dup := g.Members[id]; dup && d.err == nil {
				d.fail("member %d twice", id)
			}
			g.Members[id] = mb
		}
		g.SyncStateSet = d.ids()
		if version >= 3 {
			g.MasterRestarted = d.bool()
		}
		if d.err == nil {
			if err := g.check(); err != nil {
				d.fail("group %q: %v", g.Name, err)
			}
			if _, dup := groups[g.Name]; dup {
				d.fail("group %q twice", g.Name)
			}
		}
		groups[g.Name] = g
	}
	d.end()
	if d.err != nil {
		return d.err
	}
	m.groups = groups
	return nil
}

// check returns an error when g breaks an invariant of the machine.
func (g *Group) check() error {
	if g.NextID < 1 {
		return fmt.Errorf("next id %d", g.NextID)
	}
	for id := range g.Members {
		if id < 1 || id >= g.NextID {
			return fmt.Errorf("member %d outside 1..%d", id, g.NextID-1)
		}
	}
	if !slices.IsSorted(g.SyncStateSet) || len(slices.Compact(slices.Clone(g.SyncStateSet))) != len(g.SyncStateSet) {
		return fmt.Errorf("SyncStateSet %v not sorted and unique", g.SyncStateSet)
	}
	for _, id := range g.SyncStateSet {
		if _, ok := g.Members[id]; !ok {
			return fmt.Errorf("SyncStateSet member %d unknown", id)
		}
	}
	if g.Master != NoBroker && !g.inSet(g.Master) {
		return fmt.Errorf("master %d outside SyncStateSet %v", g.Master, g.SyncStateSet)
	}
	if g.MasterRestarted && g.Master == NoBroker {
		return fmt.Errorf("restarted master without a master")
	}
	if g.MasterEpoch < 0 || g.SyncStateSetEpoch < 0 {
		return fmt.Errorf("negative epoch")
	}
	return nil
}
