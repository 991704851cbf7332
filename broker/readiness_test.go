package broker_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/launch"
	"github.com/ferrymq/ferry/testutil"
)

// A broker is not ready before Start, nor until a name server accepted its registration;
// a name server that comes up late makes it ready within the registration retry backoff.
func TestReadinessWaitsForRegistration(t *testing.T) {
	late := testkit.FreeAddr(t) // nothing listens there until the name server starts below
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir, cfg.CommitLogSegmentSize = t.TempDir(), 64*conf.MiB
	cfg.NamesrvAddrs, cfg.HAListen = []string{late}, "127.0.0.1:0"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.Listen = ln.Addr().String()
	bo, err := launch.BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	b, err := broker.New(bo)
	require.NoError(t, err)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	}()
	require.Equal(t, []string{"store not recovered", "not registered with a name server"}, b.Readiness().Missing())
	require.NoError(t, b.Start(ln))
	require.Equal(t, []string{"not registered with a name server"}, b.Readiness().Missing(),
		"serving, but no name server accepted it (none listens)")

	startNamesrvAt(t, late)
	testutil.Eventually(t, 20*time.Second, func() bool { return len(b.Readiness().Missing()) == 0 },
		"ready once the late name server accepted the registration")
	r := b.Readiness()
	require.True(t, r.Registered && r.StoreRecovered && !r.Slave, "%+v", r)
}

// A slave is ready only while connected to its master.
func TestSlaveReadinessNeedsItsMaster(t *testing.T) {
	c := testutil.StartCluster(t)
	testutil.Eventually(t, 20*time.Second, func() bool { return len(c.Broker.Readiness().Missing()) == 0 },
		"the master is ready (its registration answered)")
	s := c.StartSlave(t, nil)
	testutil.Eventually(t, 20*time.Second, func() bool { return len(s.Broker.Readiness().Missing()) == 0 },
		"the slave connects to its master")
	require.True(t, s.Broker.Readiness().Slave)
	c.StopBroker(t)
	testutil.Eventually(t, 20*time.Second, func() bool {
		m := s.Broker.Readiness().Missing()
		return len(m) == 1 && m[0] == "slave not connected to its master"
	}, "the slave without its master is not ready")
}
