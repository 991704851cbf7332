package tools_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/testutil"
)

// consumedLines decodes consume's -o json output, one object per line.
func consumedLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var got []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		got = append(got, m)
	}
	return got
}

// TestConsumeSQL: consume --sql prints exactly the messages the SQL92 expression
// matches; a malformed one fails with the broker's refusal naming it.
func TestConsumeSQL(t *testing.T) {
	c := testutil.StartCluster(t)
	for _, n := range []string{"1", "2", "3", "2"} {
		_, errOut, code := run(t, c.NamesrvAddr, "send", "-t", "CtlSQL", "-p", "n="+n, "-p", "color=red", "body-"+n)
		require.Equal(t, 0, code, errOut)
	}
	out, errOut, code := run(t, c.NamesrvAddr, "consume", "-t", "CtlSQL", "-g", "cg-sql", "--sql", "n >= 2 AND n < 3 AND color = 'red'",
		"--from", "first", "--count", "2", "--timeout", "20s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	got := consumedLines(t, out)
	require.Len(t, got, 2)
	for _, m := range got {
		require.Equal(t, "body-2", m["body"])
	}
	out, errOut, code = run(t, c.NamesrvAddr, "consume", "-t", "CtlSQL", "-g", "cg-sql-odd", "--sql", "n <> 2",
		"--from", "first", "--timeout", "2s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	bodies := []string{}
	for _, m := range consumedLines(t, out) {
		bodies = append(bodies, m["body"].(string))
	}
	require.ElementsMatch(t, []string{"body-1", "body-3"}, bodies, "nothing the expression does not match")

	_, errOut, code = run(t, c.NamesrvAddr, "consume", "-t", "CtlSQL", "-g", "cg-sql-bad", "--sql", "n >>= 1")
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "n >>= 1")
	require.Contains(t, errOut, "refused")
	require.Equal(t, 1, strings.Count(strings.TrimSpace(errOut), "\n")+1, "one line: %q", errOut)
}

// TestSendTimers: send --deliver-after holds the message back until its time (a consumer
// that ran before then printed nothing) and it arrives afterwards; --deliver-at with a
// past time delivers at once; bad timer flags are usage errors.
func TestSendTimers(t *testing.T) {
	const delay = 6 * time.Second
	c := testutil.StartCluster(t)
	sent := time.Now()
	_, errOut, code := run(t, c.NamesrvAddr, "send", "-t", "CtlTimer", "--deliver-after", delay.String(), "-p", "k=later", "later")
	require.Equal(t, 0, code, errOut)
	out, errOut, code := run(t, c.NamesrvAddr, "consume", "-t", "CtlTimer", "-g", "cg-early", "--from", "first",
		"--timeout", "1s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	if time.Since(sent) < delay {
		require.Empty(t, consumedLines(t, out), "nothing delivered before its time")
	}
	out, errOut, code = run(t, c.NamesrvAddr, "consume", "-t", "CtlTimer", "-g", "cg-late", "--from", "first",
		"--count", "1", "--timeout", "30s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	got := consumedLines(t, out)
	require.Len(t, got, 1)
	require.Equal(t, "later", got[0]["body"])
	stored, err := time.Parse(time.RFC3339Nano, got[0]["storeTime"].(string))
	require.NoError(t, err)
	require.False(t, stored.Before(sent.Add(delay).Truncate(time.Millisecond)), "stored at %v, sent at %v", stored, sent)

	_, errOut, code = run(t, c.NamesrvAddr, "send", "-t", "CtlTimerAt", "--deliver-at", time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "now")
	require.Equal(t, 0, code, errOut)
	out, errOut, code = run(t, c.NamesrvAddr, "consume", "-t", "CtlTimerAt", "--from", "first", "--count", "1", "--timeout", "20s", "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.Len(t, consumedLines(t, out), 1, "a past delivery time delivers at once")

	for _, args := range [][]string{
		{"--deliver-at", "tomorrow"},
		{"--deliver-after", "-1s"},
		{"--deliver-after", "0s"},
		{"--delay", "2", "--deliver-after", "1s"},
		{"--deliver-at", "2030-01-02T15:04:05Z", "--deliver-after", "1s"},
	} {
		_, errOut, code := run(t, c.NamesrvAddr, append([]string{"send", "-t", "CtlTimer"}, append(args, "x")...)...)
		require.Equal(t, 2, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, "deliver", "%v", args)
	}
	_, errOut, code = run(t, c.NamesrvAddr, "consume", "-t", "CtlTimer", "--expr", "a", "--sql", "n > 1")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "exclusive")
}
