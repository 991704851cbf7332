package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// heartbeats registers a fake broker and heartbeats for it every 100 ms until the
// returned stop is called (or the test ends).
func heartbeats(t *testing.T, cl *controller.Client, r controller.BrokerReport) (id int64, stop func()) {
	testkit.Eventually(t, 15*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		got, _, err := cl.Register(ctx, r)
		r.BrokerID = got
		return err == nil
	}, "broker "+r.Addr+" registered")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				hctx, hcancel := context.WithTimeout(ctx, 2*time.Second)
				_, _ = cl.Heartbeat(hctx, r) // a failure shows as the broker not alive
				hcancel()
			}
		}
	})
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return r.BrokerID, stop
}

// ctl runs ferryctl against the controllers at addrs (FERRY_CONTROLLER).
func ctl(t *testing.T, addrs string, args ...string) (string, string, int) {
	t.Helper()
	return runEnv(t, []string{"FERRY_CONTROLLER=" + addrs}, args...)
}

// ctlJSON is ctl with -o json, requiring success, decoding stdout into v.
func ctlJSON(t *testing.T, addrs string, v any, args ...string) {
	t.Helper()
	out, errOut, code := ctl(t, addrs, append(args, "-o", "json")...)
	require.Equal(t, 0, code, "ferryctl %s: %s", strings.Join(args, " "), errOut)
	require.NoError(t, json.Unmarshal([]byte(out), v), out)
}

type replica struct {
	BrokerID       int64  `json:"brokerId"`
	Role           string `json:"role"`
	Addr           string `json:"addr"`
	HAAddr         string `json:"haAddr"`
	InSyncStateSet bool   `json:"inSyncStateSet"`
	Alive          bool   `json:"alive"`
	Epoch          int32  `json:"epoch"`
	MaxOffset      int64  `json:"maxOffset"`
	Lag            *int64 `json:"lag"`
}

type haStatus struct {
	Group             string    `json:"group"`
	Master            int64     `json:"master"`
	MasterEpoch       int32     `json:"masterEpoch"`
	SyncStateSet      []int64   `json:"syncStateSet"`
	SyncStateSetEpoch int32     `json:"syncStateSetEpoch"`
	Replicas          []replica `json:"replicas"`
}

// controller status, ha status and ha elect against a real three-node controller cluster
// with fake brokers heartbeating to it.
func TestControllerAndHACommands(t *testing.T) {
	cs := testutil.StartControllers(t, 3, nil)
	leader := cs.Leader()
	cl := cs.Client()
	b1, _ := heartbeats(t, cl, controller.BrokerReport{Cluster: "c", Group: "broker-a", Addr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912", MaxOffset: 900})
	b2, _ := heartbeats(t, cl, controller.BrokerReport{Cluster: "c", Group: "broker-a", Addr: "10.0.0.2:10911", HAAddr: "10.0.0.2:10912", MaxOffset: 700})
	var st haStatus
	testkit.Eventually(t, 20*time.Second, func() bool {
		out, _, code := ctl(t, cs.AddrList(), "ha", "status", "-b", "broker-a", "-o", "json")
		st = haStatus{}
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && st.Master != 0 &&
			len(st.Replicas) == 2 && st.Replicas[0].Alive && st.Replicas[1].Alive
	}, "a master elected, both alive")
	require.Equal(t, b1, st.Master, "the longest log")
	require.Equal(t, int32(1), st.MasterEpoch)
	require.Equal(t, []int64{b1}, st.SyncStateSet)
	require.Equal(t, replica{BrokerID: b1, Role: "master", Addr: "10.0.0.1:10911", HAAddr: "10.0.0.1:10912",
		InSyncStateSet: true, Alive: true, MaxOffset: 900, Lag: ptr(int64(0))}, st.Replicas[0])
	require.Equal(t, replica{BrokerID: b2, Role: "slave", Addr: "10.0.0.2:10911", HAAddr: "10.0.0.2:10912",
		Alive: true, MaxOffset: 700, Lag: ptr(int64(200))}, st.Replicas[1])
	out, errOut, code := ctl(t, cs.AddrList(), "ha", "status", "-b", "broker-a")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "group broker-a: master 1, epoch 1, SyncStateSet [1] (epoch 1)")
	require.Contains(t, out, "10.0.0.2:10912")

	// controller status: every node, one leader, all at the same term.
	var nodes []struct {
		Addr, NodeID, State, Leader string
		Term, AppliedIndex          uint64
		Groups                      int
		Error                       string
	}
	// (Polled: the leader may move under a loaded machine.)
	testkit.Eventually(t, 15*time.Second, func() bool {
		nodes = nil
		ctlJSON(t, cs.AddrList(), &nodes, "controller", "status")
		leaders, agree := 0, true
		for _, n := range nodes {
			if n.State == "Leader" {
				leaders++
			}
			agree = agree && n.Leader == nodes[0].Leader && n.Term == nodes[0].Term
		}
		return len(nodes) == 3 && leaders == 1 && agree
	}, "every node names the one leader")
	for i, n := range nodes {
		require.Empty(t, n.Error)
		require.Equal(t, cs.Addrs[i], n.Addr)
		require.Equal(t, fmt.Sprintf("n%d", i), n.NodeID)
		require.NotZero(t, n.Term)
		require.Equal(t, 1, n.Groups)
	}
	out, _, code = ctl(t, cs.AddrList(), "controller", "status")
	require.Equal(t, 0, code)
	require.Contains(t, out, "Leader")

	// Planned switchover to broker 2: refused while it is outside the set, done once
	// the master put it in.
	_, errOut, code = ctl(t, cs.AddrList(), "ha", "elect", "-b", "broker-a", "--broker-id", "2")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "designated broker not eligible")
	require.Contains(t, errOut, "SyncStateSet: see ferryctl ha status")
	_, err := cl.AlterSyncStateSet(context.Background(), "broker-a", b1, 1, 1, []int64{b1, b2})
	require.NoError(t, err)
	ctlJSON(t, cs.AddrList(), &st, "ha", "elect", "-b", "broker-a", "--broker-id", "2")
	require.Equal(t, b2, st.Master)
	require.Equal(t, int32(2), st.MasterEpoch)
	require.Equal(t, []int64{b2}, st.SyncStateSet)

	// Usage errors and an unknown group.
	_, errOut, code = ctl(t, cs.AddrList(), "ha", "status")
	require.Equal(t, 2, code, errOut)
	_, errOut, code = ctl(t, cs.AddrList(), "ha", "status", "-b", "nope")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "unknown broker group")

	// The flag wins over the variable; a controller that is down shows as unreachable.
	cs.Stop((leader + 1) % 3)
	out, errOut, code = runEnv(t, []string{"FERRY_CONTROLLER=127.0.0.1:1"}, "controller", "status", "--controller", cs.AddrList())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "connection refused")
	_, errOut, code = runEnv(t, []string{"FERRY_CONTROLLER=" + testkit.FreeAddr(t)}, "controller", "status")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no controller answered")
}

func ptr[T any](v T) *T { return &v }

// Controllers with TLS enforcing and ACL on: ferryctl needs --tls and an admin account.
func TestControllerCommandsWithTLSAndACL(t *testing.T) {
	cert, key := testutil.SelfSignedCert(t)
	tc, err := remoting.LoadServerTLS(cert, key, "", false)
	require.NoError(t, err)
	accounts := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(accounts, []byte("accounts:\n  - accessKey: ferryadmin\n    secretKey: ferrysecret\n    admin: true\n"), 0o600))
	cs := testutil.StartControllers(t, 1, func(o *controller.ServerOptions) {
		o.TLS = &remoting.TLSConfig{Mode: remoting.TLSEnforcing, Config: tc}
		o.ACLFile = accounts
	})
	cs.Leader()
	admin := []string{"FERRY_ACCESS_KEY=ferryadmin", "FERRY_SECRET_KEY=ferrysecret", "FERRY_CONTROLLER=" + cs.AddrList()}
	out, errOut, code := runEnv(t, admin, "controller", "status", "--tls", "-o", "json")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, `"state": "Leader"`)
	_, errOut, code = runEnv(t, admin[2:], "controller", "status", "--tls")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--access-key", "the hint for a refusal without credentials")
	_, errOut, code = runEnv(t, admin[2:], "ha", "status", "-b", "g", "--tls")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no permission")
	_, _, code = runEnv(t, admin, "controller", "status")
	require.Equal(t, 1, code, "plain TCP to an enforcing port")
}
