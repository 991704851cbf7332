package topicconf

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker/internal/metafile/metafiletest"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/protocol"
)

const topicsPath = "/store/config/topics.json"

func TestPersistRoundTrip(t *testing.T) {
	metafiletest.EachFS(t, func(t *testing.T, fsys mmap.FS, dir string) {
		o, clk := testOptions(fsys, dir)
		m, err := Open(o)
		require.NoError(t, err)
		_, err = m.CreateOrUpdate(protocol.TopicConfig{TopicName: "A", ReadQueueNums: 4, WriteQueueNums: 8,
			Perm: 6, TopicFilterType: protocol.MultiTag, TopicSysFlag: 1, Order: true,
			Attributes: map[string]string{"message.type": "FIFO"}})
		require.NoError(t, err)
		clk.ms.Add(1000)
		_, _, err = m.CreateRetryTopic("cg", 2)
		require.NoError(t, err)
		_, _, err = m.AutoCreate("Auto", protocol.AutoCreateTopicKey, 3)
		require.NoError(t, err)
		want := m.All()

		m2, err := Open(o)
		require.NoError(t, err)
		require.Equal(t, want, m2.All())
		require.Equal(t, m.DataVersion(), m2.DataVersion())

		// The next change continues the version.
		_, err = m2.Delete("Auto")
		require.NoError(t, err)
		require.Equal(t, want.DataVersion.Counter+1, m2.DataVersion().Counter)
	})
}

func TestWrittenFileHasRocketMQShape(t *testing.T) {
	m, fsys, _ := openMem(t)
	_, err := m.CreateOrUpdate(topic("TopicTest", 4, 4, 6))
	require.NoError(t, err)
	data, err := fsys.ReadFile(topicsPath)
	require.NoError(t, err)

	var doc map[string]map[string]any
	require.NoError(t, json.Unmarshal(data, &doc))
	require.ElementsMatch(t, []string{"dataVersion", "topicConfigTable"}, keys(doc))
	require.EqualValues(t, 1, doc["dataVersion"]["counter"])
	require.EqualValues(t, 1_700_000_000_000, doc["dataVersion"]["timestamp"])
	tt := doc["topicConfigTable"]["TopicTest"].(map[string]any)
	require.Equal(t, map[string]any{
		"topicName": "TopicTest", "readQueueNums": 4.0, "writeQueueNums": 4.0, "perm": 6.0,
		"topicFilterType": "SINGLE_TAG", "topicSysFlag": 0.0, "order": false, "attributes": map[string]any{},
	}, tt)
	// Built-in topics are written along with the first change.
	require.Contains(t, doc["topicConfigTable"], protocol.ScheduleTopic)
	require.Contains(t, string(data), "\n\t\"dataVersion\"", "tab-indented like fastjson's pretty format")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestLoadRocketMQ4File(t *testing.T) {
	fsys, golden := metafiletest.Golden(t, topicsPath, "rocketmq4-topics.json")
	m, _ := openFS(t, fsys)
	require.Equal(t, protocol.DataVersion{Counter: 7, Timestamp: 1700000000123}, m.DataVersion())

	cases := []protocol.TopicConfig{
		{TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 8, Perm: 6, TopicFilterType: protocol.SingleTag},
		{TopicName: "TopicOrder", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicFilterType: protocol.MultiTag, Order: true},
		{TopicName: "%RETRY%cg", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: protocol.SingleTag},
		{TopicName: "BenchmarkTest", ReadQueueNums: 1024, WriteQueueNums: 1024, Perm: 6, TopicFilterType: protocol.SingleTag},
		{TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7, TopicFilterType: protocol.SingleTag},
		{TopicName: "DefaultCluster", ReadQueueNums: 16, WriteQueueNums: 16, Perm: 7, TopicFilterType: protocol.SingleTag},
		{TopicName: "broker-a", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 7, TopicFilterType: protocol.SingleTag},
		// Not in the file: added at start.
		{TopicName: protocol.TransHalfTopic, ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6, TopicFilterType: protocol.SingleTag},
	}
	for _, want := range cases {
		got, ok := m.Get(want.TopicName)
		require.True(t, ok, want.TopicName)
		require.Equal(t, want, got)
	}

	// Auto-creation works through the loaded template.
	cfg, created, err := m.AutoCreate("Fresh", "TBW102", 4)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, int32(4), cfg.WriteQueueNums)
	require.Equal(t, int64(8), m.DataVersion().Counter)

	// The previous (RocketMQ-written) file is kept as .bak.
	bak, err := fsys.ReadFile(topicsPath + ".bak")
	require.NoError(t, err)
	require.Equal(t, golden, bak)
}

func TestLoadRocketMQ5FileTolerant(t *testing.T) {
	fsys, _ := metafiletest.Golden(t, topicsPath, "rocketmq5-topics.json")
	m, _ := openFS(t, fsys)
	require.Equal(t, protocol.DataVersion{StateVersion: 3, Counter: 42, Timestamp: 1757000000000}, m.DataVersion())

	got, ok := m.Get("TopicFifo")
	require.True(t, ok)
	require.Equal(t, map[string]string{"message.type": "FIFO"}, got.Attributes)

	got, ok = m.Get("TopicNoFilterType")
	require.True(t, ok)
	require.Equal(t, protocol.TopicConfig{TopicName: "TopicNoFilterType", ReadQueueNums: 2, WriteQueueNums: 2,
		Perm: 6, TopicFilterType: protocol.SingleTag}, got, "missing filter type means SINGLE_TAG, {} attributes mean none")

	got, ok = m.Get("KeyWins")
	require.True(t, ok)
	require.Equal(t, "KeyWins", got.TopicName)
	_, ok = m.Get("NameInValue")
	require.False(t, ok)

	for _, skipped := range []string{"bad.topic", "TooManyQueues", "WrongType"} {
		_, ok := m.Get(skipped)
		require.False(t, ok, skipped)
	}
}

func TestBackupFallback(t *testing.T) {
	good := []byte(`{"dataVersion":{"counter":5,"timestamp":1},"topicConfigTable":{"FromBak":{"topicName":"FromBak","readQueueNums":1,"writeQueueNums":1,"perm":6}}}`)
	cases := []struct {
		name      string
		main, bak []byte
		wantTopic string // "" = fresh table
		wantErr   bool
	}{
		{"neither file", nil, nil, "", false},
		{"main missing", nil, good, "FromBak", false},
		{"main empty", []byte(" \n"), good, "FromBak", false},
		{"main truncated", good[:40], good, "FromBak", false},
		{"main not an object", []byte(`[1,2]`), good, "FromBak", false},
		{"main corrupt, no bak", []byte(`{"topicConfigTable":`), nil, "", true},
		{"both corrupt", []byte(`{x`), []byte(`{y`), "", true},
		{"main fine, bak corrupt", good, []byte(`{y`), "FromBak", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, _ := testOptions(metafiletest.Files(t, topicsPath, tc.main, tc.bak), "/store")
			m, err := Open(o)
			if tc.wantErr {
				require.ErrorIs(t, err, ErrCorrupt)
				return
			}
			require.NoError(t, err)
			if tc.wantTopic != "" {
				_, ok := m.Get(tc.wantTopic)
				require.True(t, ok)
				require.Equal(t, int64(5), m.DataVersion().Counter)
			} else {
				require.Zero(t, m.DataVersion().Counter)
			}
		})
	}
}

func TestBackupHoldsPreviousVersion(t *testing.T) {
	m, fsys, _ := openMem(t)
	_, err := m.CreateOrUpdate(topic("A", 1, 1, 6))
	require.NoError(t, err)
	first, err := fsys.ReadFile(topicsPath)
	require.NoError(t, err)
	ok, err := fsys.Exists(topicsPath + ".bak")
	require.NoError(t, err)
	require.False(t, ok, "no backup before there is a previous version")

	_, err = m.CreateOrUpdate(topic("B", 1, 1, 6))
	require.NoError(t, err)
	bak, err := fsys.ReadFile(topicsPath + ".bak")
	require.NoError(t, err)
	require.Equal(t, first, bak)
}

func TestAtomicWriteLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	o, _ := testOptions(mmap.OSFS{}, dir)
	m, err := Open(o)
	require.NoError(t, err)
	for i := range 3 {
		_, err = m.CreateOrUpdate(topic("T", int32(i+1), 1, 6))
		require.NoError(t, err)
	}
	require.ElementsMatch(t, []string{"topics.json", "topics.json.bak"}, metafiletest.DirNames(t, filepath.Join(dir, "config")))
}

func TestCrashRightAfterChangeKeepsIt(t *testing.T) {
	m, fsys, _ := openMem(t)
	_, err := m.CreateOrUpdate(topic("Durable", 2, 2, 6))
	require.NoError(t, err)
	_, _, err = m.CreateRetryTopic("cg", 1)
	require.NoError(t, err)
	_, err = m.Delete("Durable")
	require.NoError(t, err)
	_, err = m.CreateOrUpdate(topic("Last", 3, 3, 6))
	require.NoError(t, err)

	m2, _ := openFS(t, fsys.Crash(nil, 0))
	require.Equal(t, m.All(), m2.All())
	_, ok := m2.Get("Durable")
	require.False(t, ok)
	_, ok = m2.Get("Last")
	require.True(t, ok)
}
