//go:build linux && failoverstress

package interop

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/controller"
)

// The controllers' own failures under load (`make failover-controllers`): the Raft
// leader SIGKILLed, then two of the three controllers down. Neither may interrupt the
// sends nor elect another master.

// foSteady starts the cluster of the controller harnesses and the load of both client
// kinds, and waits until each kind has rate sends acknowledged; it returns the cluster,
// the load and the group's state.
func foSteady(t *testing.T, rate int) (*foCluster, *foLoad, controller.GroupView) {
	t.Helper()
	c := newFOCluster(t, "", []string{foGroup}, 3, "")
	v := c.settled(t, foGroup, 1, 3, 60*time.Second)
	const topic = "FailoverControllers"
	c.createTopic(t, topic)
	c.waitTopicEverywhere(t, foGroup, topic)
	load := startFOLoad(t, foProducers(t, c.nsAddr, topic), rate)
	m := c.master(v)
	start := time.Now()
	for _, kind := range foKinds {
		haEventually(t, 60*time.Second, c.ns, func() bool { return load.ackedFrom(kind, m.listen, start) >= rate },
			fmt.Sprintf("%d sends of the %s client acknowledged", rate, kind))
	}
	return c, load, v
}

// serveFor lets the load run until each kind has had rate sends started at or after from
// acknowledged by the broker at master.
func serveFor(t *testing.T, c *foCluster, load *foLoad, master string, from time.Time, rate int, what string) {
	t.Helper()
	for _, kind := range foKinds {
		haEventually(t, 60*time.Second, c.ns, func() bool {
			return time.Now().After(from) && load.ackedFrom(kind, master, from) >= rate
		}, fmt.Sprintf("%s: %d sends of the %s client acknowledged by %s", what, rate, kind, master))
	}
}

// gapsAndFailures are the longest pause between acknowledgements of each kind in
// [from, to] and the failed sends of each kind, for the summaries.
func gapsAndFailures(load *foLoad, from, to time.Time) (map[string]int64, map[string]int64) {
	gaps, fails := map[string]int64{}, map[string]int64{}
	f, _ := load.failures()
	for _, kind := range foKinds {
		gaps[kind.String()] = foMillis(load.maxAckGap(kind, from, to))
		fails[kind.String()] = f[kind]
	}
	return gaps, fails
}

// TestFailoverControllerLeaderKill: with both client kinds sending, the controllers'
// Raft leader is SIGKILLed. Another controller leads (the time from the kill is
// reported; the target is 5 s), no send fails, the group keeps its master and epoch
// (the new leader waits a brokerHeartbeatTimeout before it judges liveness, and the
// brokers' heartbeats reach it by then), and the killed controller, started again,
// catches up with the log.
func TestFailoverControllerLeaderKill(t *testing.T) {
	rate := foEnvInt(t, "FERRY_FAILOVER_RATE", 100)
	c, load, v := foSteady(t, rate)
	m := c.master(v)
	old := c.leader(t, 30*time.Second)
	before, err := c.statusOf(old)
	require.NoError(t, err)

	killed := time.Now()
	foKill(t, old.proc)
	var next *foController
	haEventually(t, 30*time.Second, c.ns, func() bool {
		next = c.currentLeader()
		return next != nil
	}, "another controller leads")
	newLeader := time.Since(killed)
	after, err := c.statusOf(next)
	require.NoError(t, err)
	require.Greater(t, after.Term, before.Term, "a new term")

	// Sends go on past the new leader's liveness grace (brokerHeartbeatTimeout, 3 s) and
	// beyond; then the killed node comes back and catches up.
	serveFor(t, c, load, m.listen, time.Now().Add(5*time.Second), rate, "after the new leader's grace period")
	c.startController(t, old)
	haEventually(t, 60*time.Second, c.ns, func() bool {
		s, err := c.statusOf(old)
		l, lerr := c.statusOf(next)
		return err == nil && lerr == nil && s.State == "Follower" && s.Leader == next.id && s.AppliedIndex >= l.CommitIndex
	}, "the restarted controller follows and has caught up")
	serveFor(t, c, load, m.listen, time.Now(), rate, "after the restart")
	end := time.Now()
	load.halt()

	nv := c.group(foGroup)
	gaps, fails := gapsAndFailures(load, killed, end)
	printSummary(t, map[string]any{
		"harness": "failover-controllers", "case": "leader-kill", "newLeaderMs": foMillis(newLeader),
		"newLeaderWithinTarget": newLeader <= 5*time.Second, "maxAckGapMs": gaps, "failedSends": fails,
		"masterEpochBefore": v.MasterEpoch, "masterEpochAfter": nv.MasterEpoch,
	})
	t.Logf("leader %s killed; %s leads after %v (term %d → %d)", old.id, next.id, newLeader.Round(time.Millisecond), before.Term, after.Term)
	require.Equal(t, map[string]int64{"ferry": 0, "official": 0}, fails, "sends failed")
	require.Equal(t, v.Master, nv.Master, "the group keeps its master")
	require.Equal(t, v.MasterEpoch, nv.MasterEpoch, "no election")
}

// TestFailoverControllerMinority: with both client kinds sending, two of the three
// controllers are SIGKILLed (the leader and a follower), so none leads. The master goes
// on serving (every send acknowledged, so its slaves keep replicating) through four
// brokerHeartbeatTimeouts; once the two are back, a leader is elected and the group still
// has the same master at the same epoch, with the same epoch files: no election happened.
func TestFailoverControllerMinority(t *testing.T) {
	rate := foEnvInt(t, "FERRY_FAILOVER_RATE", 100)
	c, load, v := foSteady(t, rate)
	m := c.master(v)
	epochs := map[string]any{}
	for _, b := range c.groupBrokers(foGroup) {
		epochs[b.name] = b.epochs(t)
	}
	leader := c.leader(t, 30*time.Second)
	down := []*foController{leader}
	for _, n := range c.ctls {
		if n != leader && len(down) < 2 {
			down = append(down, n)
		}
	}
	var left *foController
	for _, n := range c.ctls {
		if n != down[0] && n != down[1] {
			left = n
		}
	}

	killed := time.Now()
	for _, n := range down {
		foKill(t, n.proc)
	}
	haEventually(t, 30*time.Second, c.ns, func() bool {
		s, err := c.statusOf(left)
		return err == nil && s.State != "Leader"
	}, "the remaining controller does not lead")
	serveFor(t, c, load, m.listen, killed.Add(12*time.Second), rate, "with two controllers down")
	restarted := time.Now()
	for _, n := range down {
		c.startController(t, n)
	}
	nl := c.leader(t, 30*time.Second)
	// Past the new leader's liveness grace, with the brokers' heartbeats answered.
	serveFor(t, c, load, m.listen, time.Now().Add(5*time.Second), rate, "with the controllers back")
	nv := c.settled(t, foGroup, v.MasterEpoch, 3, 30*time.Second)
	end := time.Now()
	load.halt()

	gaps, fails := gapsAndFailures(load, killed, end)
	printSummary(t, map[string]any{
		"harness": "failover-controllers", "case": "two-of-three-down", "downMs": foMillis(restarted.Sub(killed)),
		"maxAckGapMs": gaps, "failedSends": fails, "masterEpochBefore": v.MasterEpoch, "masterEpochAfter": nv.MasterEpoch,
	})
	t.Logf("controllers %s and %s down for %v; %s leads after; master %d epoch %d → %d epoch %d", down[0].id, down[1].id,
		restarted.Sub(killed).Round(time.Millisecond), nl.id, v.Master, v.MasterEpoch, nv.Master, nv.MasterEpoch)
	require.Equal(t, map[string]int64{"ferry": 0, "official": 0}, fails, "sends failed")
	require.Equal(t, v.Master, nv.Master, "the group keeps its master")
	require.Equal(t, v.MasterEpoch, nv.MasterEpoch, "no election")
	for _, b := range c.groupBrokers(foGroup) {
		require.Equal(t, epochs[b.name], b.epochs(t), "%s: epoch file unchanged", b.name)
	}
}

// statusOf asks controller n for its own state.
func (c *foCluster) statusOf(n *foController) (controller.Status, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.ctl.StatusOf(ctx, n.listen)
}

// leader waits until a running controller reports itself leader and returns it.
func (c *foCluster) leader(t *testing.T, timeout time.Duration) *foController {
	t.Helper()
	var l *foController
	haEventually(t, timeout, c.ns, func() bool {
		l = c.currentLeader()
		return l != nil
	}, "a controller leader")
	return l
}

// currentLeader is the running controller that reports itself leader, or nil.
func (c *foCluster) currentLeader() *foController {
	for _, n := range c.ctls {
		select {
		case <-n.proc.exited:
			continue
		default:
		}
		if s, err := c.statusOf(n); err == nil && s.State == "Leader" {
			return n
		}
	}
	return nil
}
