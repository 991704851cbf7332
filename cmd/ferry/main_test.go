package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRunRejectsBadConfigNamingTheKey(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"standalone", "--broker-listen", "bad", "--data-dir", t.TempDir()}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), "broker.listen")
}

func TestRunUsageAndConfig(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run(nil, &out, &errb))
	require.Contains(t, errb.String(), "standalone")
	out.Reset()
	require.Equal(t, 0, run([]string{"config"}, &out, &errb))
	require.Contains(t, out.String(), "broker.dataDir")
	require.Equal(t, 2, run([]string{"nope"}, &out, &errb))
}
