package nameserver

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The name server is ready only between serving its port and shutting down.
func TestReadinessWhileServing(t *testing.T) {
	s, err := New(DefaultOptions())
	require.NoError(t, err)
	require.Equal(t, []string{"name server not serving"}, s.Readiness().Missing(), "before Start")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Start(ln))
	require.True(t, s.Readiness().Serving)
	require.Empty(t, s.Readiness().Missing())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	require.False(t, s.Readiness().Serving, "after Shutdown")
}
