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

func TestTopicAttributes(t *testing.T) {
	c := testutil.StartCluster(t)
	ns := c.NamesrvAddr
	attributes := func() map[string]string {
		data, err := os.ReadFile(filepath.Join(c.Dir, "config", "topics.json"))
		require.NoError(t, err)
		w, err := protocol.DecodeTopicConfigSerializeWrapper(data)
		require.NoError(t, err)
		return w.TopicConfigTable["Dedup"].Attributes
	}
	var res map[string]string
	runJSON(t, ns, &res, "topic", "create", "-t", "Dedup", "--dedup-window", "10m")
	require.Equal(t, map[string]string{"dedupWindow": "10m"}, attributes())
	runJSON(t, ns, &res, "topic", "update", "-t", "Dedup", "--dedup-window", "off")
	require.Nil(t, attributes())
	runJSON(t, ns, &res, "topic", "update", "-t", "Dedup", "--attr", "dedupWindow=10m")
	require.Equal(t, map[string]string{"dedupWindow": "10m"}, attributes())
	runJSON(t, ns, &res, "topic", "update", "-t", "Dedup", "--attr", "message.type=NORMAL", "--remove-attr", "dedupWindow")
	require.Equal(t, map[string]string{"message.type": "NORMAL"}, attributes())

	_, errOut, code := run(t, ns, "topic", "update", "-t", "Dedup", "--attr", "dedupWindow=forever")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "dedupWindow")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, errOut)
	_, errOut, code = run(t, ns, "topic", "update", "-t", "Dedup", "--attr", "noequals")
	require.Equal(t, 2, code, errOut)
	require.Equal(t, map[string]string{"message.type": "NORMAL"}, attributes(), "a refused change changes nothing")
}
