package interop

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
	"github.com/ferrymq/ferry/testutil"
)

// impostorConn is an anonymous client that speaks the remoting protocol frame by frame
// from its own loopback address, 127.0.0.2: another host as far as the name server can
// tell.
type impostorConn struct {
	conn   net.Conn
	codec  remoting.Codec
	opaque int32
}

func dialImpostor(t *testing.T, addr string) *impostorConn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &impostorConn{conn: conn}
}

// invoke sends req and reads its response.
func (c *impostorConn) invoke(req *remoting.Command) (*remoting.Command, error) {
	c.opaque++
	req.Opaque = c.opaque
	frame, err := c.codec.AppendFrame(nil, req)
	if err != nil {
		return nil, err
	}
	if err := c.conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return nil, err
	}
	if _, err := c.conn.Write(frame); err != nil {
		return nil, err
	}
	var head [remoting.LengthFieldSize]byte
	if _, err := io.ReadFull(c.conn, head[:]); err != nil {
		return nil, err
	}
	n, err := remoting.ParseLength(head[:], remoting.DefaultMaxFrameSize)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.conn, buf); err != nil {
		return nil, err
	}
	return c.codec.DecodeFrame(buf)
}

// TestRestartedBrokerGetsItsRouteBackDespiteAnImpostor replays the registration race of
// the security issue with ACL off: while the broker is restarted (stopped, then started
// on the same address and data), an impostor keeps sending REGISTER_BROKER for its name
// from another connection, with its own address or with the broker's. The impostor's
// address never enters the route; the restarted broker is answered and its route, with
// its own queue data, is back within one registration interval; the official producer
// sends every message to the real broker.
func TestRestartedBrokerGetsItsRouteBackDespiteAnImpostor(t *testing.T) {
	const interval = 2 * time.Second
	for _, tc := range []struct {
		name        string
		ownAddrOnly bool
	}{
		{"impostor's address", true},
		{"broker's address", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const topic = "RestartRaceTopic"
			c := testutil.StartCluster(t, testutil.WithBrokerOptions(func(o *broker.Options) { o.RegisterInterval = interval }))
			createTopic(t, c, topic, 2)
			name := brokerName(t, c, topic)
			brokerAddr := c.BrokerAddr
			own := "127.0.0.2:10911"
			want := map[int64]string{0: brokerAddr}

			routeOf := func() (map[int64]string, int32) {
				route, ok := c.NameServer.Table().TopicRoute(topic)
				if !ok || len(route.BrokerDatas) == 0 {
					return nil, 0
				}
				return route.BrokerDatas[0].BrokerAddrs, route.QueueDatas[0].WriteQueueNums
			}
			addrs := []string{own}
			if !tc.ownAddrOnly {
				addrs = append(addrs, brokerAddr)
			}
			register := func(addr string) *remoting.Command {
				body, err := protocol.EncodeRegisterBrokerBody(&protocol.RegisterBrokerBody{TopicConfigSerializeWrapper: protocol.TopicConfigSerializeWrapper{
					TopicConfigTable: map[string]protocol.TopicConfig{topic: {TopicName: topic, ReadQueueNums: 8, WriteQueueNums: 8, Perm: 6}},
					DataVersion:      protocol.DataVersion{Counter: 999, Timestamp: time.Now().UnixMilli()}}})
				if err != nil {
					panic(err)
				}
				req := protocol.NewRequest(protocol.RegisterBroker, &protocol.RegisterBrokerRequestHeader{BrokerName: name,
					BrokerAddr: addr, ClusterName: "DefaultCluster", BrokerID: 0})
				req.Body = body
				return req
			}

			imp := dialImpostor(t, c.NamesrvAddr)
			ctx, cancel := context.WithCancel(context.Background())
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				attempts int
				problems []string
			)
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					addr := addrs[i%len(addrs)]
					resp, err := imp.invoke(register(addr))
					mu.Lock()
					attempts++
					switch {
					case err != nil:
						problems = append(problems, fmt.Sprintf("impostor's request failed: %v", err))
					case addr == own && resp.Code == int16(protocol.Success):
						problems = append(problems, "the impostor's own address was accepted")
					}
					if a, _ := routeOf(); slices.Contains(slices.Collect(maps.Values(a)), own) {
						problems = append(problems, fmt.Sprintf("the route points to the impostor: %v", a))
					}
					stop := err != nil
					mu.Unlock()
					if stop {
						return
					}
				}
			})
			stopImpostor := sync.OnceFunc(func() { cancel(); wg.Wait() })
			t.Cleanup(stopImpostor)
			attemptsMade := func() int { mu.Lock(); defer mu.Unlock(); return attempts }

			testutil.Eventually(t, 5*time.Second, func() bool { return attemptsMade() >= 20 }, "the impostor at work")
			a, q := routeOf()
			require.Equal(t, want, a)
			require.EqualValues(t, 2, q, "the live broker's queue data")

			before := attemptsMade()
			c.RestartBroker(t) // stops (unregisters) and starts on the same address and data
			testutil.Eventually(t, interval, func() bool {
				a, q := routeOf()
				return maps.Equal(a, want) && q == 2
			}, "the restarted broker's route back within one registration interval")
			require.Greater(t, attemptsMade(), before, "the impostor kept registering during the restart")

			p := newProducer(t, c, "pg-restart-race")
			raw := newRaw(t, c.BrokerAddr)
			stored := raw.maxOffset(topic, 0) + raw.maxOffset(topic, 1)
			for range 20 {
				sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
				res, err := p.SendSync(sctx, primitive.NewMessage(topic, []byte("x")))
				scancel()
				require.NoError(t, err)
				require.Equal(t, primitive.SendOK, res.Status)
			}
			testutil.Eventually(t, 10*time.Second, func() bool { return raw.maxOffset(topic, 0)+raw.maxOffset(topic, 1) == stored+20 },
				"the real broker stored all 20")

			stopImpostor()
			mu.Lock()
			defer mu.Unlock()
			require.Empty(t, problems)
		})
	}
}
