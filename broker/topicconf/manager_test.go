package topicconf

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/protocol"
)

// fakeClock is a settable clock for data version timestamps.
type fakeClock struct{ ms atomic.Int64 }

func (c *fakeClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }

func testOptions(fsys mmap.FS, dir string) (Options, *fakeClock) {
	clk := &fakeClock{}
	clk.ms.Store(1_700_000_000_000)
	o := DefaultOptions()
	o.FS = fsys
	o.Dir = dir
	o.Now = clk.now
	return o, clk
}

func openMem(t *testing.T) (*Manager, *mmap.MemFS, *fakeClock) {
	t.Helper()
	fsys := mmap.NewMemFS()
	m, clk := openFS(t, fsys)
	return m, fsys, clk
}

// openFS opens a Manager with test options on fsys at /store.
func openFS(t *testing.T, fsys mmap.FS) (*Manager, *fakeClock) {
	t.Helper()
	o, clk := testOptions(fsys, "/store")
	m, err := Open(o)
	require.NoError(t, err)
	return m, clk
}

func topic(name string, r, w, perm int32) protocol.TopicConfig {
	return protocol.TopicConfig{TopicName: name, ReadQueueNums: r, WriteQueueNums: w, Perm: perm}
}

func TestOptionsValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Options)
		ok   bool
	}{
		{"defaults with dir", func(o *Options) { o.Dir = "/x" }, true},
		{"no dir", func(*Options) {}, false},
		{"nil fs", func(o *Options) { o.Dir = "/x"; o.FS = nil }, false},
		{"nil clock", func(o *Options) { o.Dir = "/x"; o.Now = nil }, false},
		{"zero default queues", func(o *Options) { o.Dir = "/x"; o.DefaultTopicQueueNums = 0 }, false},
		{"too many schedule queues", func(o *Options) { o.Dir = "/x"; o.ScheduleTopicQueueNums = 1025 }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			tc.edit(&o)
			err := o.Validate()
			if tc.ok {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, ErrInvalidOptions)
			}
		})
	}
}

func TestOpenCreatesBuiltinTopics(t *testing.T) {
	rw := protocol.PermRead | protocol.PermWrite
	cases := []struct {
		name    string
		edit    func(*Options)
		present map[string][2]int32 // topic → {queues, perm}
		absent  []string
	}{
		{
			name: "defaults",
			edit: func(*Options) {},
			present: map[string][2]int32{
				protocol.AutoCreateTopicKey:     {8, rw | protocol.PermInherit},
				protocol.ScheduleTopic:          {18, rw},
				protocol.TransHalfTopic:         {1, rw},
				protocol.TransOpHalfTopic:       {1, rw},
				protocol.TransCheckMaxTimeTopic: {1, rw},
				protocol.SelfTestTopic:          {1, rw},
				protocol.OffsetMovedEventTopic:  {1, rw},
			},
			absent: []string{protocol.TraceTopic},
		},
		{
			name: "auto-create disabled, names and trace",
			edit: func(o *Options) {
				o.AutoCreateTopicEnable = false
				o.TraceTopicEnable = true
				o.ClusterName = "DefaultCluster"
				o.BrokerName = "broker-a"
				o.ScheduleTopicQueueNums = 5
			},
			present: map[string][2]int32{
				protocol.ScheduleTopic:         {5, rw},
				protocol.TraceTopic:            {1, rw},
				"DefaultCluster":               {16, rw | protocol.PermInherit},
				"DefaultCluster_REPLY_TOPIC":   {1, rw},
				"broker-a":                     {1, rw | protocol.PermInherit},
				protocol.OffsetMovedEventTopic: {1, rw},
			},
			absent: []string{protocol.AutoCreateTopicKey},
		},
		{
			name:    "queue count of template",
			edit:    func(o *Options) { o.DefaultTopicQueueNums = 4; o.BrokerName = "host.example.com" },
			present: map[string][2]int32{protocol.AutoCreateTopicKey: {4, rw | protocol.PermInherit}},
			absent:  []string{"host.example.com"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := testOptions(mmap.NewMemFS(), "/store")
			tc.edit(&o)
			m, err := Open(o)
			require.NoError(t, err)
			for name, want := range tc.present {
				cfg, ok := m.Get(name)
				require.True(t, ok, name)
				require.Equal(t, want[0], cfg.ReadQueueNums, name)
				require.Equal(t, want[0], cfg.WriteQueueNums, name)
				require.Equal(t, want[1], cfg.Perm, name)
				require.Equal(t, protocol.SingleTag, cfg.TopicFilterType, name)
				require.True(t, m.IsBuiltin(name), name)
			}
			for _, name := range tc.absent {
				_, ok := m.Get(name)
				require.False(t, ok, name)
			}
			require.Zero(t, m.DataVersion().Counter)
		})
	}
}

func TestCreateOrUpdate(t *testing.T) {
	m, _, _ := openMem(t)
	_, err := m.CreateOrUpdate(topic("Existing", 4, 4, 6))
	require.NoError(t, err)

	long := make([]byte, 128)
	for i := range long {
		long[i] = 'a'
	}
	cases := []struct {
		name    string
		cfg     protocol.TopicConfig
		changed bool
		err     error
	}{
		{"create", topic("TopicA", 8, 8, 6), true, nil},
		{"identical is no change", topic("Existing", 4, 4, 6), false, nil},
		{"explicit SINGLE_TAG equals empty", protocol.TopicConfig{TopicName: "Existing", ReadQueueNums: 4,
			WriteQueueNums: 4, Perm: 6, TopicFilterType: protocol.SingleTag, Attributes: map[string]string{}}, false, nil},
		{"update queues", topic("Existing", 8, 8, 6), true, nil},
		{"update order flag", protocol.TopicConfig{TopicName: "Existing", ReadQueueNums: 8, WriteQueueNums: 8,
			Perm: 6, Order: true}, true, nil},
		{"multi tag", protocol.TopicConfig{TopicName: "Multi", ReadQueueNums: 1, WriteQueueNums: 1,
			Perm: 6, TopicFilterType: protocol.MultiTag}, true, nil},
		{"write-only drain", topic("Drain", 4, 0, 6), true, nil},
		{"max queues", topic("Big", MaxQueueNums, MaxQueueNums, 6), true, nil},
		{"retry topic allowed", topic("%RETRY%g1", 1, 1, 6), true, nil},
		{"priority perm", topic("Prio", 1, 1, 6|protocol.PermPriority), true, nil},
		{"empty name", topic("", 1, 1, 6), false, ErrInvalidConfig},
		{"bad char", topic("a.b", 1, 1, 6), false, protocol.ErrInvalidName},
		{"too long", topic(string(long), 1, 1, 6), false, ErrInvalidConfig},
		{"too many queues", topic("T", 1025, 8, 6), false, ErrInvalidConfig},
		{"negative queues", topic("T", -1, 8, 6), false, ErrInvalidConfig},
		{"no queues", topic("T", 0, 0, 6), false, ErrInvalidConfig},
		{"unknown perm bit", topic("T", 1, 1, 0x16), false, ErrInvalidConfig},
		{"negative perm", topic("T", 1, 1, -1), false, ErrInvalidConfig},
		{"bad filter type", protocol.TopicConfig{TopicName: "T", ReadQueueNums: 1, WriteQueueNums: 1,
			Perm: 6, TopicFilterType: "REGEX"}, false, ErrInvalidConfig},
		{"template topic", topic(protocol.AutoCreateTopicKey, 8, 8, 7), false, ErrSystemTopic},
		{"schedule topic", topic(protocol.ScheduleTopic, 18, 18, 6), false, ErrSystemTopic},
		{"rmq_sys_ prefix", topic("rmq_sys_x", 1, 1, 6), false, ErrSystemTopic},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := m.DataVersion()
			changed, err := m.CreateOrUpdate(tc.cfg)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.Equal(t, before, m.DataVersion())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.changed, changed)
			got, ok := m.Get(tc.cfg.TopicName)
			require.True(t, ok)
			require.Equal(t, tc.cfg.ReadQueueNums, got.ReadQueueNums)
			require.Equal(t, tc.cfg.Order, got.Order)
			if tc.changed {
				require.Equal(t, before.Counter+1, m.DataVersion().Counter)
			} else {
				require.Equal(t, before, m.DataVersion())
			}
		})
	}
}

func TestAutoCreate(t *testing.T) {
	cases := []struct {
		name      string
		autoOn    bool
		template  string
		requested int
		wantQ     int32
		wantPerm  int32
		err       error
	}{
		{"fewer than template", true, protocol.AutoCreateTopicKey, 4, 4, 6, nil},
		{"capped by template", true, protocol.AutoCreateTopicKey, 64, 8, 6, nil},
		{"zero means template", true, protocol.AutoCreateTopicKey, 0, 8, 6, nil},
		{"negative means template", true, protocol.AutoCreateTopicKey, -3, 8, 6, nil},
		{"user template with inherit", true, "Tmpl", 16, 2, 4, nil},
		{"template not inheritable", true, "Plain", 4, 0, 0, ErrTemplateNotInheritable},
		{"template missing", true, "Nope", 4, 0, 0, ErrTemplateNotFound},
		{"auto-create disabled", false, protocol.AutoCreateTopicKey, 4, 0, 0, ErrTemplateNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := testOptions(mmap.NewMemFS(), "/store")
			o.AutoCreateTopicEnable = tc.autoOn
			m, err := Open(o)
			require.NoError(t, err)
			_, err = m.CreateOrUpdate(protocol.TopicConfig{TopicName: "Tmpl", ReadQueueNums: 2,
				WriteQueueNums: 2, Perm: protocol.PermRead | protocol.PermInherit, TopicFilterType: protocol.MultiTag})
			require.NoError(t, err)
			_, err = m.CreateOrUpdate(topic("Plain", 8, 8, 6))
			require.NoError(t, err)

			cfg, created, err := m.AutoCreate("NewTopic", tc.template, tc.requested)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				require.False(t, created)
				_, ok := m.Get("NewTopic")
				require.False(t, ok)
				return
			}
			require.NoError(t, err)
			require.True(t, created)
			require.Equal(t, tc.wantQ, cfg.ReadQueueNums)
			require.Equal(t, tc.wantQ, cfg.WriteQueueNums)
			require.Equal(t, tc.wantPerm, cfg.Perm)
			got, ok := m.Get("NewTopic")
			require.True(t, ok)
			require.Equal(t, cfg, got)

			again, created, err := m.AutoCreate("NewTopic", tc.template, 1)
			require.NoError(t, err)
			require.False(t, created)
			require.Equal(t, cfg, again)
		})
	}
	t.Run("bad name", func(t *testing.T) {
		m, _, _ := openMem(t)
		_, _, err := m.AutoCreate("bad topic", protocol.AutoCreateTopicKey, 4)
		require.ErrorIs(t, err, ErrInvalidConfig)
	})
	t.Run("filter type inherited", func(t *testing.T) {
		m, _, _ := openMem(t)
		_, err := m.CreateOrUpdate(protocol.TopicConfig{TopicName: "T", ReadQueueNums: 2,
			WriteQueueNums: 2, Perm: 7, TopicFilterType: protocol.MultiTag})
		require.NoError(t, err)
		cfg, _, err := m.AutoCreate("X", "T", 8)
		require.NoError(t, err)
		require.Equal(t, protocol.MultiTag, cfg.TopicFilterType)
	})
}

func TestAutoCreateConcurrentCreatesOnce(t *testing.T) {
	m, _, _ := openMem(t)
	var changes atomic.Int32
	m.opts.OnChange = func() { changes.Add(1) }
	var wg sync.WaitGroup
	var created atomic.Int32
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg, c, err := m.AutoCreate("Hot", protocol.AutoCreateTopicKey, 4)
			if err != nil || cfg.WriteQueueNums != 4 {
				panic(fmt.Sprint(i, err, cfg))
			}
			if c {
				created.Add(1)
			}
			_, _ = m.Get("Hot")
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), created.Load())
	require.Equal(t, int32(1), changes.Load())
	require.Equal(t, int64(1), m.DataVersion().Counter)
}

func TestRetryAndDLQTopics(t *testing.T) {
	m, _, _ := openMem(t)
	cfg, created, err := m.CreateRetryTopic("cg", 3)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, protocol.TopicConfig{TopicName: "%RETRY%cg", ReadQueueNums: 3, WriteQueueNums: 3,
		Perm: 6, TopicFilterType: protocol.SingleTag}, cfg)

	cfg, created, err = m.CreateRetryTopic("cg", 5)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, int32(3), cfg.WriteQueueNums, "an existing retry topic is kept")

	cfg, created, err = m.CreateDLQTopic("cg")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, protocol.TopicConfig{TopicName: "%DLQ%cg", ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: 6, TopicFilterType: protocol.SingleTag}, cfg)

	_, _, err = m.CreateRetryTopic("cg2", 0)
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, _, err = m.CreateRetryTopic("bad group", 1)
	require.ErrorIs(t, err, protocol.ErrInvalidName)
	_, _, err = m.CreateDLQTopic("")
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Equal(t, int64(2), m.DataVersion().Counter)
}

func TestDelete(t *testing.T) {
	m, _, _ := openMem(t)
	_, err := m.CreateOrUpdate(topic("Gone", 1, 1, 6))
	require.NoError(t, err)
	v := m.DataVersion()

	ok, err := m.Delete("Gone")
	require.NoError(t, err)
	require.True(t, ok)
	_, found := m.Get("Gone")
	require.False(t, found)
	require.Equal(t, v.Counter+1, m.DataVersion().Counter)

	ok, err = m.Delete("Gone")
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, v.Counter+1, m.DataVersion().Counter)

	for _, sys := range []string{protocol.ScheduleTopic, protocol.AutoCreateTopicKey, protocol.TransHalfTopic} {
		_, err = m.Delete(sys)
		require.ErrorIs(t, err, ErrSystemTopic, sys)
		_, found = m.Get(sys)
		require.True(t, found, sys)
	}
}

func TestDataVersionAndOnChange(t *testing.T) {
	fsys := mmap.NewMemFS()
	o, clk := testOptions(fsys, "/store")
	var calls atomic.Int32
	o.OnChange = func() { calls.Add(1) }
	m, err := Open(o)
	require.NoError(t, err)
	require.Equal(t, int64(1_700_000_000_000), m.DataVersion().Timestamp)

	clk.ms.Store(1_700_000_005_000)
	_, err = m.CreateOrUpdate(topic("A", 1, 1, 6))
	require.NoError(t, err)
	require.Equal(t, protocol.DataVersion{Counter: 1, Timestamp: 1_700_000_005_000}, m.DataVersion())
	require.Equal(t, int32(1), calls.Load())

	_, err = m.CreateOrUpdate(topic("A", 1, 1, 6)) // no change
	require.NoError(t, err)
	_, _, err = m.AutoCreate("B", protocol.AutoCreateTopicKey, 1)
	require.NoError(t, err)
	_, err = m.Delete("A")
	require.NoError(t, err)
	require.Equal(t, int64(3), m.DataVersion().Counter)
	require.Equal(t, int32(3), calls.Load())

	all := m.All()
	require.Equal(t, m.DataVersion(), all.DataVersion)
	require.Equal(t, m.Len(), len(all.TopicConfigTable))
	require.Contains(t, all.TopicConfigTable, "B")
}

func TestReturnedConfigsAreCopies(t *testing.T) {
	m, _, _ := openMem(t)
	_, err := m.CreateOrUpdate(protocol.TopicConfig{TopicName: "A", ReadQueueNums: 1, WriteQueueNums: 1,
		Perm: 6, Attributes: map[string]string{"k": "v"}})
	require.NoError(t, err)
	got, _ := m.Get("A")
	got.Attributes["k"] = "changed"
	all := m.All()
	all.TopicConfigTable["A"].Attributes["k"] = "changed"
	delete(all.TopicConfigTable, "A")
	again, ok := m.Get("A")
	require.True(t, ok)
	require.Equal(t, "v", again.Attributes["k"])
}

func TestWriteFailureLeavesTableUnchanged(t *testing.T) {
	m, fsys, _ := openMem(t)
	_, err := m.CreateOrUpdate(topic("A", 1, 1, 6))
	require.NoError(t, err)
	v := m.DataVersion()
	var calls atomic.Int32
	m.opts.OnChange = func() { calls.Add(1) }

	fsys.SetCapacity(1) // every further write fails with ENOSPC
	_, err = m.CreateOrUpdate(topic("B", 1, 1, 6))
	require.ErrorIs(t, err, mmap.ErrNoSpace)
	_, ok := m.Get("B")
	require.False(t, ok)
	_, err = m.Delete("A")
	require.ErrorIs(t, err, mmap.ErrNoSpace)
	_, ok = m.Get("A")
	require.True(t, ok)
	require.Equal(t, v, m.DataVersion())
	require.Zero(t, calls.Load())

	fsys.SetCapacity(0)
	changed, err := m.CreateOrUpdate(topic("B", 1, 1, 6))
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, v.Counter+1, m.DataVersion().Counter)
}

// The trace topic is created under the configured name, and only when enabled.
func TestTraceTopicName(t *testing.T) {
	for _, tc := range []struct {
		enable bool
		name   string
		want   string
	}{{true, "", protocol.TraceTopic}, {true, "MyTrace", "MyTrace"}, {false, "MyTrace", ""}} {
		o := DefaultOptions()
		o.Dir, o.FS = t.TempDir(), mmap.OSFS{}
		o.TraceTopicEnable, o.TraceTopicName = tc.enable, tc.name
		m, err := Open(o)
		require.NoError(t, err)
		_, std := m.Get(protocol.TraceTopic)
		_, custom := m.Get("MyTrace")
		require.Equal(t, tc.want == protocol.TraceTopic, std, "%+v", tc)
		require.Equal(t, tc.want == "MyTrace", custom, "%+v", tc)
		if tc.want != "" {
			require.True(t, m.IsBuiltin(tc.want))
		}
	}
}
