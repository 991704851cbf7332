package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
)

func TestMessageCancel(t *testing.T) {
	c := testutil.StartCluster(t)
	send := func(args ...string) string {
		out, errOut, code := run(t, c.NamesrvAddr, append([]string{"send", "-t", "CancelCtl", "-o", "json"}, args...)...)
		require.Equal(t, 0, code, errOut)
		var sent []struct {
			MsgID string `json:"msgId"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &sent), out)
		require.Len(t, sent, 1)
		return sent[0].MsgID
	}
	parked := send("--deliver-after", "1h", "reminder")
	cancel := func(args ...string) (map[string]string, string, int) {
		out, errOut, code := run(t, c.NamesrvAddr, append([]string{"message", "cancel", "-o", "json"}, args...)...)
		var got map[string]string
		if code == 0 {
			require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		}
		return got, errOut, code
	}
	got, errOut, code := cancel("-t", "CancelCtl", "-i", parked)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "CANCELLED", got["status"])
	require.Equal(t, parked, got["msgId"])
	require.Equal(t, "CancelCtl", got["topic"])
	require.NotEmpty(t, got["broker"])

	got, errOut, code = cancel("-i", parked)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "ALREADY_CANCELLED", got["status"])

	out, errOut, code := run(t, c.NamesrvAddr, "message", "cancel", "-i", parked)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "ALREADY_CANCELLED")

	plain := send("delivered at once")
	_, errOut, code = cancel("-t", "CancelCtl", "-i", plain)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "already delivered")

	_, errOut, code = cancel("-i", "0A0000010000000000000000DEADBEEF")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no scheduled message")

	_, errOut, code = cancel()
	require.Equal(t, 2, code, "a missing id is a usage error")
	require.Contains(t, errOut, "-i/--id")
}
