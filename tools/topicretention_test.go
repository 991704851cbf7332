package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/testutil"
)

func TestTopicRetentionAttributes(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	attributes := func() map[string]string {
		data, err := os.ReadFile(filepath.Join(c.Dir, "config", "topics.json"))
		require.NoError(t, err)
		w, err := protocol.DecodeTopicConfigSerializeWrapper(data)
		require.NoError(t, err)
		return w.TopicConfigTable["Clicks"].Attributes
	}
	var res map[string]string
	runJSON(t, ns, &res, "topic", "create", "-t", "Clicks", "--attr", "retentionTime=24h", "--attr", "retentionBytes=10GiB")
	require.Equal(t, map[string]string{"retentionTime": "24h", "retentionBytes": "10GiB"}, attributes())
	runJSON(t, ns, &res, "topic", "update", "-t", "Clicks", "--attr", "retentionTime=7d", "--remove-attr", "retentionBytes")
	require.Equal(t, map[string]string{"retentionTime": "7d"}, attributes())

	for _, bad := range []string{"retentionTime=30s", "retentionBytes=10GB", "retentionBytes=100"} {
		_, errOut, code := run(t, ns, "topic", "update", "-t", "Clicks", "--attr", bad)
		require.Equal(t, 1, code, bad)
		require.Contains(t, errOut, strings.Split(bad, "=")[0])
		require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, errOut)
	}
	require.Equal(t, map[string]string{"retentionTime": "7d"}, attributes(), "a refused change changes nothing")
}
