package controller

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
)

// Scripted tests of the state machine, in the transaction package's style: each
// testdata/*.txt file is a list of blocks
//
//	command key=value ...
//	----
//	expected output
//
// separated by blank lines; '#' lines between blocks are comments. Commands:
//
//	register group=G addr=A [ha=H] [id=N] [restart=E]
//	elect group=G alive=ID:EPOCH:OFFSET,... [unclean] [prefer=N] [from=E]
//	alter group=G master=N epoch=E setEpoch=S set=ID,...
//	state
//
// After every command the harness checks each group's invariants, that the command
// survives an encode/decode round trip, and that a machine restored from a snapshot
// prints the same state. Run with -rewrite to regenerate the expected output after a
// deliberate change, then review the diff.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt scripts")

func TestScripts(t *testing.T) {
	testkit.RunScripts(t, "testdata/*.txt", *rewrite, func(t *testing.T) func(string) string {
		m := NewMachine()
		return func(line string) string { return runCommand(t, m, line) }
	})
}

// runCommand executes one script line against m and returns its output.
func runCommand(t *testing.T, m *Machine, line string) string {
	fields := strings.Fields(line)
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	num := func(k string) int64 {
		v, ok := args[k]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(t, err, line)
		return n
	}
	list := func(k string) []int64 {
		var out []int64
		for _, f := range strings.Split(args[k], ",") {
			if f == "" {
				continue
			}
			n, err := strconv.ParseInt(f, 10, 64)
			require.NoError(t, err, line)
			out = append(out, n)
		}
		return out
	}
	var c Command
	switch fields[0] {
	case "state":
		return printState(m)
	case "register":
		c = Command{Kind: KindRegister, Group: args["group"], Addr: args["addr"], HAAddr: args["ha"], BrokerID: num("id"),
			MasterEpoch: int32(num("restart"))}
	case "elect":
		c = Command{Kind: KindElect, Group: args["group"], BrokerID: num("prefer"), MasterEpoch: int32(num("from"))}
		_, c.Unclean = args["unclean"]
		for _, f := range strings.Split(args["alive"], ",") {
			if f == "" {
				continue
			}
			var r Replica
			_, err := fmt.Sscanf(f, "%d:%d:%d", &r.ID, &r.Epoch, &r.Offset)
			require.NoError(t, err, line)
			c.Alive = append(c.Alive, r)
		}
	case "alter":
		c = Command{Kind: KindAlterSyncStateSet, Group: args["group"], BrokerID: num("master"),
			MasterEpoch: int32(num("epoch")), SyncStateSetEpoch: int32(num("setEpoch")), SyncStateSet: list("set")}
	default:
		t.Fatalf("unknown command %q", line)
	}
	// The command as Raft would carry it.
	dec, err := DecodeCommand(EncodeCommand(c))
	require.NoError(t, err, line)
	require.Equal(t, c, dec, line)

	before := printState(m)
	r := m.Apply(dec)
	after := printState(m)
	require.Equal(t, r.Changed, before != after, "%s: Changed=%v", line, r.Changed)
	for _, g := range m.Groups() {
		require.NoError(t, g.check(), line)
	}
	restored := NewMachine()
	require.NoError(t, restored.Restore(m.Snapshot()), line)
	require.Equal(t, after, printState(restored), "%s: snapshot round trip", line)

	var b strings.Builder
	switch {
	case r.Err != nil:
		fmt.Fprintf(&b, "refused: %v", r.Err)
		if r.Changed {
			b.WriteString(" (state changed)")
		}
	case !r.Changed:
		fmt.Fprintf(&b, "ok broker=%d (unchanged)", r.BrokerID)
	default:
		fmt.Fprintf(&b, "ok broker=%d", r.BrokerID)
	}
	if r.Group.Name != "" {
		b.WriteString("\n" + printGroup(r.Group))
	}
	return b.String()
}

func printState(m *Machine) string {
	var b strings.Builder
	for _, g := range m.Groups() {
		b.WriteString(printGroup(g) + "\n")
	}
	if b.Len() == 0 {
		return "no groups"
	}
	return b.String()
}

func printGroup(g Group) string {
	var members []string
	for _, id := range slices.Sorted(maps.Keys(g.Members)) {
		mb := g.Members[id]
		if mb.HAAddr == "" {
			members = append(members, fmt.Sprintf("%d=%s", id, mb.Addr))
		} else {
			members = append(members, fmt.Sprintf("%d=%s/ha=%s", id, mb.Addr, mb.HAAddr))
		}
	}
	restarted := ""
	if g.MasterRestarted {
		restarted = " restarted"
	}
	return fmt.Sprintf("%s: master=%d epoch=%d%s set=%v setEpoch=%d members=[%s] next=%d",
		g.Name, g.Master, g.MasterEpoch, restarted, g.SyncStateSet, g.SyncStateSetEpoch, strings.Join(members, " "), g.NextID)
}

func TestApplyUnknownKind(t *testing.T) {
	r := NewMachine().Apply(Command{Kind: 9, Group: "g"})
	require.ErrorIs(t, r.Err, ErrBadCommand)
	require.False(t, r.Changed)
}

func TestDecodeCommandRefuses(t *testing.T) {
	good := EncodeCommand(Command{Kind: KindRegister, Group: "g", Addr: "a:1"})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{3}, good[1:]...),
		"version 0": append([]byte{0}, good[1:]...),
		"kind":      append([]byte{1, 7}, good[2:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(slices.Clone(good), 0),
		"long":      append([]byte{1, 1, 0xff, 0xff, 0x03}, good[3:]...),
	} {
		_, err := DecodeCommand(b)
		require.ErrorIs(t, err, ErrBadCommand, name)
	}
}

func TestRestoreRefusesBrokenSnapshot(t *testing.T) {
	m := NewMachine()
	m.Apply(Command{Kind: KindRegister, Group: "g", Addr: "a:1"})
	snap := m.Snapshot()
	other := NewMachine()
	other.Apply(Command{Kind: KindRegister, Group: "h", Addr: "b:1"})
	want := printState(other)
	for name, b := range map[string][]byte{
		"truncated": snap[:len(snap)-1],
		"version":   append([]byte{9}, snap[1:]...),
		"dup member": func() []byte {
			e := encoder{}
			e.byte(snapshotVersion)
			e.uint(1)
			e.str("g")
			e.int(3)
			e.int(NoBroker)
			e.int(0)
			e.int(0)
			e.uint(2)
			for range 2 {
				e.int(1)
				e.str("a:1")
				e.str("")
			}
			e.ids(nil)
			return e.b
		}(),
		"trailing": append(slices.Clone(snap), 0),
	} {
		err := other.Restore(b)
		require.ErrorIs(t, err, ErrBadCommand, name)
		require.Equal(t, want, printState(other), name)
	}
	// A snapshot whose master is outside its SyncStateSet breaks an invariant.
	bad := &Machine{groups: map[string]*Group{"g": {Name: "g", NextID: 2, Master: 1, MasterEpoch: 1,
		Members: map[int64]Member{1: {Addr: "a:1"}}}}}
	require.True(t, errors.Is(other.Restore(bad.Snapshot()), ErrBadCommand))
}

// encodeCommandV1 writes c in the version-1 layout (no HA address), as nodes did before
// members had one.
func encodeCommandV1(c Command) []byte {
	b := EncodeCommand(Command{Kind: c.Kind, Group: c.Group, BrokerID: c.BrokerID, Addr: c.Addr,
		Alive: c.Alive, Unclean: c.Unclean, MasterEpoch: c.MasterEpoch,
		SyncStateSetEpoch: c.SyncStateSetEpoch, SyncStateSet: c.SyncStateSet})
	// Version 2 with an empty haAddr has one zero length byte after addr: drop it.
	d := decoder{b: b[2:]}
	d.str()
	d.int()
	d.str()
	at := len(b) - len(d.b)
	out := append([]byte{1}, b[1:at]...)
	return append(out, b[at+1:]...)
}

// A log written in version 1 still replays: the same command, without HA address.
func TestDecodeCommandVersion1(t *testing.T) {
	for _, c := range []Command{
		{Kind: KindRegister, Group: "g", Addr: "10.0.0.1:10911", BrokerID: 2},
		{Kind: KindElect, Group: "g", Alive: []Replica{{ID: 1, Epoch: 2, Offset: 300}}, Unclean: true, BrokerID: 1},
		{Kind: KindAlterSyncStateSet, Group: "g", BrokerID: 1, MasterEpoch: 3, SyncStateSetEpoch: 4, SyncStateSet: []int64{1, 2}},
	} {
		b := encodeCommandV1(c)
		require.Equal(t, byte(1), b[0])
		got, err := DecodeCommand(b)
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
}

// A version-1 snapshot (members without HA addresses) restores.
func TestRestoreVersion1(t *testing.T) {
	e := encoder{}
	e.byte(1)
	e.uint(1)
	e.str("g")
	e.int(3)          // next id
	e.int(2)          // master
	e.int(4)          // master epoch
	e.int(5)          // set epoch
	e.uint(2)         // members
	e.int(1)          // id
	e.str("a:1")      // addr
	e.int(2)          // id
	e.str("b:1")      // addr
	e.ids([]int64{2}) // set
	m := NewMachine()
	require.NoError(t, m.Restore(e.b))
	g, ok := m.Group("g")
	require.True(t, ok)
	require.Equal(t, Group{Name: "g", NextID: 3, Master: 2, MasterEpoch: 4, SyncStateSetEpoch: 5,
		Members: map[int64]Member{1: {Addr: "a:1"}, 2: {Addr: "b:1"}}, SyncStateSet: []int64{2}}, g)
	// Written back, it is version 2.
	require.Equal(t, byte(snapshotVersion), m.Snapshot()[0])
}

// A version-2 snapshot (no MasterRestarted) restores, the flag off; a version-3 one keeps
// it.
func TestRestoreVersion2(t *testing.T) {
	e := encoder{}
	e.byte(2)
	e.uint(1)
	e.str("g")
	e.int(2)          // next id
	e.int(1)          // master
	e.int(3)          // master epoch
	e.int(4)          // set epoch
	e.uint(1)         // members
	e.int(1)          // id
	e.str("a:1")      // addr
	e.str("a:2")      // haAddr
	e.ids([]int64{1}) // set
	m := NewMachine()
	require.NoError(t, m.Restore(e.b))
	g, ok := m.Group("g")
	require.True(t, ok)
	require.Equal(t, Group{Name: "g", NextID: 2, Master: 1, MasterEpoch: 3, SyncStateSetEpoch: 4,
		Members: map[int64]Member{1: {Addr: "a:1", HAAddr: "a:2"}}, SyncStateSet: []int64{1}}, g)

	r := m.Apply(Command{Kind: KindRegister, Group: "g", BrokerID: 1, Addr: "a:1", HAAddr: "a:2", MasterEpoch: 3})
	require.True(t, r.Changed)
	require.True(t, r.Group.MasterRestarted)
	again := NewMachine()
	require.NoError(t, again.Restore(m.Snapshot()))
	g, _ = again.Group("g")
	require.True(t, g.MasterRestarted, "the flag survives a snapshot")
	// A snapshot claiming a restarted master in a group without one breaks an invariant.
	bad := &Machine{groups: map[string]*Group{"g": {Name: "g", NextID: 1, MasterRestarted: true, Members: map[int64]Member{}}}}
	require.ErrorIs(t, again.Restore(bad.Snapshot()), ErrBadCommand)
}

// DryRun answers as Apply would and changes nothing.
func TestDryRun(t *testing.T) {
	m := NewMachine()
	m.Apply(Command{Kind: KindRegister, Group: "g", Addr: "a:1"})
	m.Apply(Command{Kind: KindRegister, Group: "g", Addr: "b:1"})
	before := printState(m)
	elect := Command{Kind: KindElect, Group: "g", Alive: []Replica{{ID: 2, Offset: 5}}}
	r := m.DryRun(elect)
	require.NoError(t, r.Err)
	require.True(t, r.Changed)
	require.Equal(t, int64(2), r.BrokerID)
	require.Equal(t, before, printState(m))
	require.Equal(t, r, m.Apply(elect))
	require.ErrorIs(t, m.DryRun(Command{Kind: KindElect, Group: "x"}).Err, ErrUnknownGroup)
	require.ErrorIs(t, m.DryRun(elect).Err, ErrMasterAlive)
}

func FuzzRestore(f *testing.F) {
	m := NewMachine()
	m.Apply(Command{Kind: KindRegister, Group: "g", Addr: "a:1", HAAddr: "a:2"})
	m.Apply(Command{Kind: KindRegister, Group: "g", Addr: "b:1"})
	m.Apply(Command{Kind: KindElect, Group: "g", Alive: []Replica{{ID: 1}}})
	f.Add(m.Snapshot())
	m.Apply(Command{Kind: KindRegister, Group: "g", Addr: "a:1", HAAddr: "a:2", BrokerID: 1, MasterEpoch: 1})
	f.Add(m.Snapshot())
	f.Add(NewMachine().Snapshot())
	f.Fuzz(func(t *testing.T, b []byte) {
		m := NewMachine()
		if err := m.Restore(b); err != nil {
			require.ErrorIs(t, err, ErrBadCommand)
			require.Empty(t, m.Groups())
			return
		}
		for _, g := range m.Groups() {
			require.NoError(t, g.check())
		}
		again := NewMachine()
		require.NoError(t, again.Restore(m.Snapshot()))
		require.Equal(t, printState(m), printState(again))
	})
}

func FuzzDecodeCommand(f *testing.F) {
	f.Add(encodeCommandV1(Command{Kind: KindRegister, Group: "g", Addr: "127.0.0.1:10911"}))
	f.Add(EncodeCommand(Command{Kind: KindRegister, Group: "g", Addr: "127.0.0.1:10911", HAAddr: "127.0.0.1:10912"}))
	f.Add(EncodeCommand(Command{Kind: KindElect, Group: "g", Alive: []Replica{{1, 2, 300}, {2, 2, 200}}, Unclean: true}))
	f.Add(EncodeCommand(Command{Kind: KindElect, Group: "g", BrokerID: 2, MasterEpoch: 4}))
	f.Add(EncodeCommand(Command{Kind: KindRegister, Group: "g", Addr: "a:1", BrokerID: 1, MasterEpoch: 3}))
	f.Add(EncodeCommand(Command{Kind: KindAlterSyncStateSet, Group: "g", BrokerID: 1, MasterEpoch: 3,
		SyncStateSetEpoch: 4, SyncStateSet: []int64{1, 2, 3}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			require.ErrorIs(t, err, ErrBadCommand)
			return
		}
		again, err := DecodeCommand(EncodeCommand(c))
		require.NoError(t, err)
		require.Equal(t, c, again)
		NewMachine().Apply(c) // must not panic
	})
}
