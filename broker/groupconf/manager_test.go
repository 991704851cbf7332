package groupconf

import (
	"encoding/json"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker/internal/metafile/metafiletest"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/protocol"
)

const groupsPath = "/store/config/subscriptionGroup.json"

type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

func testOptions(fsys mmap.FS, dir string) (Options, *fakeClock) {
	clk := &fakeClock{}
	clk.ms.Store(1_700_000_000_000)
	o := DefaultOptions()
	o.FS, o.Dir, o.Now = fsys, dir, clk.now
	return o, clk
}

func openMem(t *testing.T) (*Manager, *mmap.MemFS) {
	t.Helper()
	fsys := mmap.NewMemFS()
	return openFS(t, fsys), fsys
}

// openFS opens a Manager with test options on fsys at /store.
func openFS(t *testing.T, fsys mmap.FS) *Manager {
	t.Helper()
	o, _ := testOptions(fsys, "/store")
	m, err := Open(o)
	require.NoError(t, err)
	return m
}

func TestOptionsValidate(t *testing.T) {
	o := DefaultOptions()
	require.ErrorIs(t, o.Validate(), ErrInvalidOptions)
	o.Dir = "/x"
	require.NoError(t, o.Validate())
	o.FS = nil
	require.ErrorIs(t, o.Validate(), ErrInvalidOptions)
	o = DefaultOptions()
	o.Dir, o.Now = "/x", nil
	require.ErrorIs(t, o.Validate(), ErrInvalidOptions)
	_, err := Open(DefaultOptions())
	require.ErrorIs(t, err, ErrInvalidOptions)
}

func TestFindOrCreate(t *testing.T) {
	m, _ := openMem(t)
	cfg, created, err := m.FindOrCreate("cg")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, DefaultConfig("cg"), cfg)
	require.Equal(t, Config{GroupName: "cg", ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, BrokerID: 0,
		WhichBrokerWhenConsumeSlowly: 1, NotifyConsumerIDsChangedEnable: true}, cfg)
	require.Equal(t, int64(1), m.DataVersion().Counter)

	again, created, err := m.FindOrCreate("cg")
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, cfg, again)
	require.Equal(t, int64(1), m.DataVersion().Counter)

	_, _, err = m.FindOrCreate("bad group")
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, _, err = m.FindOrCreate("")
	require.ErrorIs(t, err, protocol.ErrInvalidName)

	o, _ := testOptions(mmap.NewMemFS(), "/store")
	o.AutoCreateSubscriptionGroup = false
	off, err := Open(o)
	require.NoError(t, err)
	_, _, err = off.FindOrCreate("cg")
	require.ErrorIs(t, err, ErrNotFound)
	_, ok := off.Get("cg")
	require.False(t, ok)
	_, err = off.Update(DefaultConfig("cg"))
	require.NoError(t, err)
	_, created, err = off.FindOrCreate("cg")
	require.NoError(t, err)
	require.False(t, created)
}

func TestFindOrCreateConcurrent(t *testing.T) {
	m, _ := openMem(t)
	var wg sync.WaitGroup
	var created atomic.Int32
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, c, err := m.FindOrCreate("hot")
			if err != nil {
				panic(err)
			}
			if c {
				created.Add(1)
			}
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), created.Load())
	require.Equal(t, int64(1), m.DataVersion().Counter)
}

func TestUpdate(t *testing.T) {
	m, _ := openMem(t)
	with := func(edit func(*Config)) Config {
		c := DefaultConfig("cg")
		edit(&c)
		return c
	}
	cases := []struct {
		name    string
		cfg     Config
		changed bool
		err     error
	}{
		{"create", DefaultConfig("cg"), true, nil},
		{"same", DefaultConfig("cg"), false, nil},
		{"disable consume", with(func(c *Config) { c.ConsumeEnable = false }), true, nil},
		{"no retry queues", with(func(c *Config) { c.RetryQueueNums = 0 }), true, nil},
		{"max retry queues", with(func(c *Config) { c.RetryQueueNums = MaxRetryQueueNums }), true, nil},
		{"retry zero times", with(func(c *Config) { c.RetryMaxTimes = 0 }), true, nil},
		{"empty name", with(func(c *Config) { c.GroupName = "" }), false, ErrInvalidConfig},
		{"bad name", with(func(c *Config) { c.GroupName = "a/b" }), false, protocol.ErrInvalidName},
		{"negative retry queues", with(func(c *Config) { c.RetryQueueNums = -1 }), false, ErrInvalidConfig},
		{"too many retry queues", with(func(c *Config) { c.RetryQueueNums = MaxRetryQueueNums + 1 }), false, ErrInvalidConfig},
		{"negative retry times", with(func(c *Config) { c.RetryMaxTimes = -1 }), false, ErrInvalidConfig},
		{"negative broker id", with(func(c *Config) { c.BrokerID = -1 }), false, ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := m.DataVersion()
			changed, err := m.Update(tc.cfg)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Equal(t, before, m.DataVersion())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.changed, changed)
			got, ok := m.Get(tc.cfg.GroupName)
			require.True(t, ok)
			require.Equal(t, tc.cfg, got)
			if changed {
				require.Equal(t, before.Counter+1, m.DataVersion().Counter)
			} else {
				require.Equal(t, before, m.DataVersion())
			}
		})
	}
}

func TestDelete(t *testing.T) {
	m, _ := openMem(t)
	_, _, err := m.FindOrCreate("cg")
	require.NoError(t, err)
	ok, err := m.Delete("cg")
	require.NoError(t, err)
	require.True(t, ok)
	_, found := m.Get("cg")
	require.False(t, found)
	ok, err = m.Delete("cg")
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, int64(2), m.DataVersion().Counter)
	require.Zero(t, m.Len())
}

func TestCounterFitsInt32(t *testing.T) {
	require.Equal(t, int64(1), nextVersion(protocol.DataVersion{Counter: math.MaxInt32}, 5).Counter)
	require.Equal(t, int64(math.MaxInt32), nextVersion(protocol.DataVersion{Counter: math.MaxInt32 - 1}, 5).Counter)
	require.Equal(t, int64(1), nextVersion(protocol.DataVersion{Counter: -4}, 5).Counter)
	require.Equal(t, int64(5), nextVersion(protocol.DataVersion{Counter: 7}, 5).Timestamp)
}

// goAdminWrapper and goAdminGroup restate the structs the official Go admin
// client decodes GET_ALL_SUBSCRIPTIONGROUP_CONFIG into (admin/response.go,
// encoding/json, case-insensitive names); its package cannot be imported
// here without extra go.sum entries.
type goAdminWrapper struct {
	SubscriptionGroupTable map[string]goAdminGroup
	DataVersion            struct {
		Timestamp int64
		Counter   int32
	}
}

type goAdminGroup struct {
	GroupName                      string
	ConsumeEnable                  bool
	ConsumeFromMinEnable           bool
	ConsumeBroadcastEnable         bool
	RetryMaxTimes                  int
	RetryQueueNums                 int
	BrokerId                       int //nolint:revive // the client's spelling
	WhichBrokerWhenConsumeSlowly   int
	NotifyConsumerIDsChangedEnable bool
}

func TestSnapshotDecodesInGoAdminClient(t *testing.T) {
	m, _ := openMem(t)
	_, _, err := m.FindOrCreate("cg")
	require.NoError(t, err)
	custom := DefaultConfig("slow")
	custom.RetryMaxTimes, custom.BrokerID, custom.NotifyConsumerIDsChangedEnable = 3, 1, false
	_, err = m.Update(custom)
	require.NoError(t, err)

	body, err := json.Marshal(m.All())
	require.NoError(t, err)
	var w goAdminWrapper
	require.NoError(t, json.Unmarshal(body, &w))
	require.Equal(t, int32(2), w.DataVersion.Counter)
	require.Equal(t, int64(1_700_000_000_000), w.DataVersion.Timestamp)
	require.Equal(t, goAdminGroup{GroupName: "slow", ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryMaxTimes: 3, RetryQueueNums: 1, BrokerId: 1,
		WhichBrokerWhenConsumeSlowly: 1}, w.SubscriptionGroupTable["slow"])
	require.Len(t, w.SubscriptionGroupTable, 2)

	var generic map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &generic))
	require.JSONEq(t, `{}`, string(generic["forbiddenTable"]))

	empty, err := json.Marshal(Table{})
	require.NoError(t, err)
	require.JSONEq(t, `{"subscriptionGroupTable":{},"dataVersion":{"stateVersion":0,"timestamp":0,"counter":0},"forbiddenTable":{}}`, string(empty))
}

func TestConfigUnmarshalDefaults(t *testing.T) {
	var c Config
	require.NoError(t, json.Unmarshal([]byte(`{"groupName":"g","retryMaxTimes":2,"unknown":[1]}`), &c))
	want := DefaultConfig("g")
	want.RetryMaxTimes = 2
	require.Equal(t, want, c)
	require.Error(t, json.Unmarshal([]byte(`{"retryQueueNums":"x"}`), &c))
}

func TestPersistRoundTrip(t *testing.T) {
	metafiletest.EachFS(t, func(t *testing.T, fsys mmap.FS, dir string) {
		o, clk := testOptions(fsys, dir)
		m, err := Open(o)
		require.NoError(t, err)
		_, _, err = m.FindOrCreate("a")
		require.NoError(t, err)
		clk.ms.Add(10)
		c := DefaultConfig("b")
		c.ConsumeEnable, c.RetryQueueNums, c.WhichBrokerWhenConsumeSlowly = false, 0, 3
		_, err = m.Update(c)
		require.NoError(t, err)

		m2, err := Open(o)
		require.NoError(t, err)
		require.Equal(t, m.All(), m2.All())

		if _, onDisk := fsys.(mmap.OSFS); onDisk {
			require.ElementsMatch(t, []string{"subscriptionGroup.json", "subscriptionGroup.json.bak"},
				metafiletest.DirNames(t, filepath.Join(dir, "config")), "no temp file is left behind")
		}
	})
}

func TestLoadRocketMQ4File(t *testing.T) {
	fsys, golden := metafiletest.Golden(t, groupsPath, "rocketmq4-subscriptionGroup.json")
	m := openFS(t, fsys)
	require.Equal(t, protocol.DataVersion{Counter: 4, Timestamp: 1700000000456}, m.DataVersion())
	require.Equal(t, 4, m.Len())

	cg := DefaultConfig("cg")
	cg.RetryMaxTimes, cg.RetryQueueNums = 3, 2
	got, ok := m.Get("cg")
	require.True(t, ok)
	require.Equal(t, cg, got)
	got, ok = m.Get("cg_disabled")
	require.True(t, ok)
	require.Equal(t, Config{GroupName: "cg_disabled", RetryMaxTimes: 16, BrokerID: 1, WhichBrokerWhenConsumeSlowly: 2}, got)
	got, ok = m.Get("TOOLS_CONSUMER")
	require.True(t, ok)
	require.Equal(t, DefaultConfig("TOOLS_CONSUMER"), got)

	_, _, err := m.FindOrCreate("new")
	require.NoError(t, err)
	require.Equal(t, int64(5), m.DataVersion().Counter)
	bak, err := fsys.ReadFile(groupsPath + ".bak")
	require.NoError(t, err)
	require.Equal(t, golden, bak)
}

func TestLoadRocketMQ5FileTolerant(t *testing.T) {
	fsys, _ := metafiletest.Golden(t, groupsPath, "rocketmq5-subscriptionGroup.json")
	m := openFS(t, fsys)
	require.Equal(t, protocol.DataVersion{StateVersion: 2, Counter: 0, Timestamp: 1757000000000}, m.DataVersion(),
		"a counter beyond int32 restarts at 0")

	cg5 := DefaultConfig("cg5")
	cg5.RetryMaxTimes = 5
	got, ok := m.Get("cg5")
	require.True(t, ok)
	require.Equal(t, cg5, got)

	sparse := DefaultConfig("sparse")
	sparse.RetryMaxTimes = 7
	got, ok = m.Get("sparse")
	require.True(t, ok)
	require.Equal(t, sparse, got, "absent fields take RocketMQ defaults")

	for _, skipped := range []string{"bad group", "negativeRetry", "wrongType"} {
		_, ok := m.Get(skipped)
		require.False(t, ok, skipped)
	}
	require.Equal(t, 2, m.Len())
}

func TestBackupFallback(t *testing.T) {
	good := []byte(`{"subscriptionGroupTable":{"fromBak":{"groupName":"fromBak"}},"dataVersion":{"counter":9,"timestamp":1}}`)
	cases := []struct {
		name      string
		main, bak []byte
		want      bool // fromBak loaded
		wantErr   bool
	}{
		{"fresh", nil, nil, false, false},
		{"main missing", nil, good, true, false},
		{"main empty", []byte("\n"), good, true, false},
		{"main corrupt", []byte(`{"subscriptionGroupTable":{`), good, true, false},
		{"main corrupt, no bak", []byte(`{"subscriptionGroupTable":{`), nil, false, true},
		{"both corrupt", []byte(`nope`), []byte(`{`), false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := testOptions(metafiletest.Files(t, groupsPath, tc.main, tc.bak), "/store")
			m, err := Open(o)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrCorrupt)
				return
			}
			require.NoError(t, err)
			_, ok := m.Get("fromBak")
			require.Equal(t, tc.want, ok)
		})
	}
}

func TestCrashRightAfterChangeKeepsIt(t *testing.T) {
	m, fsys := openMem(t)
	_, _, err := m.FindOrCreate("a")
	require.NoError(t, err)
	c := DefaultConfig("b")
	c.RetryMaxTimes = 1
	_, err = m.Update(c)
	require.NoError(t, err)

	m2 := openFS(t, fsys.Crash(nil, 0))
	require.Equal(t, m.All(), m2.All())
}

func TestWriteFailureLeavesTableUnchanged(t *testing.T) {
	m, fsys := openMem(t)
	_, _, err := m.FindOrCreate("a")
	require.NoError(t, err)
	v := m.DataVersion()
	fsys.SetCapacity(1)
	_, _, err = m.FindOrCreate("b")
	require.ErrorIs(t, err, mmap.ErrNoSpace)
	_, err = m.Delete("a")
	require.ErrorIs(t, err, mmap.ErrNoSpace)
	_, ok := m.Get("a")
	require.True(t, ok)
	_, ok = m.Get("b")
	require.False(t, ok)
	require.Equal(t, v, m.DataVersion())
}
