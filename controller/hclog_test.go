package controller

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

func TestHclogAdapter(t *testing.T) {
	var buf bytes.Buffer
	l := newHclog(zerolog.New(&buf).Level(zerolog.InfoLevel))
	require.False(t, l.IsDebug())
	require.True(t, l.IsInfo())

	l.Debug("hidden")
	require.Empty(t, buf.String())

	l.Named("raft").Named("transport").With("peer", "n1").Warn("lost", "err", errors.New("boom"), "term", 3, "odd")
	require.JSONEq(t, `{"level":"warn","raft":"raft.transport","peer":"n1","err":"boom","term":3,"EXTRA_VALUE_AT_END":"odd","message":"lost"}`, buf.String())

	buf.Reset()
	l.SetLevel(hclog.Error)
	l.Info("hidden")
	require.Empty(t, buf.String())
	l.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Error}).Print("from std")
	require.JSONEq(t, `{"level":"error","message":"from std"}`, buf.String())
}
