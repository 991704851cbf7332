package topicconf

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker/internal/metafile/metafiletest"
	"github.com/ferrymq/ferry/protocol"
)

// FuzzLoadTopics checks that loading any topics.json never panics, and that
// whatever loads survives a write and a reload unchanged. Seeds live in
// testdata/fuzz/FuzzLoadTopics and include the golden files.
func FuzzLoadTopics(f *testing.F) {
	metafiletest.Seed(f, "rocketmq4-topics.json", "rocketmq5-topics.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		// Never nil, so that an empty input is written as an empty file.
		o, _ := testOptions(metafiletest.Files(t, topicsPath, append([]byte{}, data...), nil), "/store")
		m, err := Open(o)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		for name, cfg := range m.All().TopicConfigTable {
			require.Equal(t, name, cfg.TopicName)
			require.NoError(t, validate(&cfg))
		}
		_, err = m.CreateOrUpdate(protocol.TopicConfig{TopicName: "FuzzWriteProbe", ReadQueueNums: 1,
			WriteQueueNums: 1, Perm: 6})
		require.NoError(t, err)
		m2, err := Open(o)
		require.NoError(t, err)
		require.Equal(t, m.All(), m2.All())
	})
}
