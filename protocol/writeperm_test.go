package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBrokerWritePermHeadersRoundTrip(t *testing.T) {
	var req BrokerWritePermRequestHeader
	require.NoError(t, req.DecodeExt(NewExt(&BrokerWritePermRequestHeader{BrokerName: "broker-a"})))
	require.Equal(t, "broker-a", req.BrokerName)
	require.ErrorIs(t, req.DecodeExt(nil), ErrMissingField)

	var wipe WipeWritePermOfBrokerResponseHeader
	ext := NewExt(&WipeWritePermOfBrokerResponseHeader{WipeTopicCount: 7})
	require.Equal(t, "7", ext.Value("wipeTopicCount"))
	require.NoError(t, wipe.DecodeExt(ext))
	require.EqualValues(t, 7, wipe.WipeTopicCount)

	var add AddWritePermOfBrokerResponseHeader
	ext = NewExt(&AddWritePermOfBrokerResponseHeader{AddTopicCount: 0})
	require.Equal(t, "0", ext.Value("addTopicCount"))
	require.NoError(t, add.DecodeExt(ext))
	require.ErrorIs(t, add.DecodeExt(nil), ErrMissingField)
}

// writePermHeaderCases are the broker drain headers' cases of headerCases.
func writePermHeaderCases() []headerCase {
	return []headerCase{
		{
			name:     "BrokerWritePermRequestHeader",
			full:     &BrokerWritePermRequestHeader{BrokerName: "broker-a"},
			fresh:    func() Header { return new(BrokerWritePermRequestHeader) },
			required: []string{"brokerName"},
		},
		{
			name:     "WipeWritePermOfBrokerResponseHeader",
			full:     &WipeWritePermOfBrokerResponseHeader{WipeTopicCount: 3},
			fresh:    func() Header { return new(WipeWritePermOfBrokerResponseHeader) },
			required: []string{"wipeTopicCount"},
			typed:    []string{"wipeTopicCount"},
		},
		{
			name:     "AddWritePermOfBrokerResponseHeader",
			full:     &AddWritePermOfBrokerResponseHeader{AddTopicCount: 3},
			fresh:    func() Header { return new(AddWritePermOfBrokerResponseHeader) },
			required: []string{"addTopicCount"},
			typed:    []string{"addTopicCount"},
		},
	}
}
