package message

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScanProperties(t *testing.T) {
	props, err := EncodeProperties(map[string]string{
		PropertyUniqKey: "U1", PropertyWaitStoreMsgOK: "false", PropertyTransactionPrepared: "true",
		PropertyProducerGroup: "pg", PropertyDelayLevel: "3", PropertyTimerDeliverMs: "99",
		PropertyRealTopic: "x", "FERRY_TRAN_NEXT_CHECK_MS": "1", PropertyTags: "t", PropertyCluster: "",
	})
	require.NoError(t, err)
	s := ScanProperties(props)
	require.Equal(t, "U1", string(s.UniqKey))
	require.False(t, s.WaitStore())
	require.True(t, s.IsPrepared())
	require.Equal(t, "pg", string(s.ProducerGroup))
	require.True(t, s.HasDelayLevel())
	require.Equal(t, "99", string(s.TimerDeliverMs))
	require.NotNil(t, s.Cluster, "present with an empty value")
	require.Empty(t, s.Cluster)
	require.Nil(t, s.TimerDelayMs, "absent")
	require.Equal(t, 2, s.Bookkeeping, "REAL_TOPIC and the reserved FERRY_ key")

	empty := ScanProperties(nil)
	require.True(t, empty.WaitStore())
	require.False(t, empty.IsPrepared())
	require.False(t, empty.HasDelayLevel())

	// Every value agrees with LookupProperty, including repeated keys (last wins).
	dup := append(append([]byte(nil), props...), "DELAY\x010\x02"...)
	s = ScanProperties(dup)
	v, _ := LookupProperty(dup, PropertyDelayLevel)
	require.Equal(t, string(v), string(s.DelayLevel))
	require.False(t, s.HasDelayLevel())
}

func TestScanPropertiesAllocs(t *testing.T) {
	props := []byte("UNIQ_KEY\x01AB\x02TAGS\x01t\x02KEYS\x01k1 k2\x02WAIT\x01true\x02")
	n := testing.AllocsPerRun(100, func() { _ = ScanProperties(props) })
	require.Zero(t, n)
}

func FuzzScanProperties(f *testing.F) {
	f.Add([]byte("UNIQ_KEY\x01AB\x02DELAY\x013\x02"))
	f.Add([]byte("\x01\x02\x01x\x02=\x01\x01\x02"))
	f.Fuzz(func(t *testing.T, props []byte) {
		s := ScanProperties(props)
		for key, got := range map[string][]byte{PropertyUniqKey: s.UniqKey, PropertyDelayLevel: s.DelayLevel,
			PropertyWaitStoreMsgOK: s.Wait, PropertyProducerGroup: s.ProducerGroup} {
			v, ok := LookupProperty(props, key)
			if ok != (got != nil) || string(v) != string(got) {
				t.Fatalf("%s: scan %q, lookup %q %v", key, got, v, ok)
			}
		}
	})
}
