package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The epoch cache round-trips and an inconsistent history is refused both ways.
func TestBrokerEpochCache(t *testing.T) {
	c := &BrokerEpochCache{ClusterName: "c", BrokerName: "broker-a", BrokerID: 2, MaxOffset: 90,
		EpochList: []EpochEntry{{Epoch: 1, StartOffset: 0, EndOffset: 40}, {Epoch: 3, StartOffset: 40, EndOffset: 90}}}
	b, err := EncodeBrokerEpochCache(c)
	require.NoError(t, err)
	require.JSONEq(t, `{"clusterName":"c","brokerName":"broker-a","brokerId":2,"maxOffset":90,
		"epochList":[{"epoch":1,"startOffset":0,"endOffset":40},{"epoch":3,"startOffset":40,"endOffset":90}]}`, string(b))
	got, err := DecodeBrokerEpochCache(b)
	require.NoError(t, err)
	require.Equal(t, c, got)

	empty, err := EncodeBrokerEpochCache(&BrokerEpochCache{BrokerName: "b"})
	require.NoError(t, err)
	require.Contains(t, string(empty), `"epochList":[]`)

	for name, body := range map[string]string{
		"epochs not ascending": `{"epochList":[{"epoch":3,"startOffset":0,"endOffset":4},{"epoch":3,"startOffset":4,"endOffset":5}],"maxOffset":5}`,
		"a gap":                `{"epochList":[{"epoch":1,"startOffset":0,"endOffset":4},{"epoch":2,"startOffset":5,"endOffset":6}],"maxOffset":6}`,
		"past the end":         `{"epochList":[{"epoch":1,"startOffset":0,"endOffset":9}],"maxOffset":6}`,
		"epoch 0":              `{"epochList":[{"epoch":0,"startOffset":0,"endOffset":0}],"maxOffset":0}`,
		"negative end":         `{"maxOffset":-1}`,
		"not an object":        `[]`,
	} {
		_, err := DecodeBrokerEpochCache([]byte(body))
		require.ErrorIs(t, err, ErrBadBody, name)
	}
	c.EpochList[1].StartOffset = 41
	_, err = EncodeBrokerEpochCache(c)
	require.ErrorIs(t, err, ErrBadBody)
}
