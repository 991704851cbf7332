package client

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/testutil"
)

// newCancelEnv is an admin environment whose delay level 1 is 1s and level 2 3s.
func newCancelEnv(t *testing.T) (*adminEnv, *rawBroker) {
	c := testutil.StartCluster(t, testutil.WithBrokerConfig(func(cfg *conf.BrokerConfig) {
		cfg.DelayLevels = "1s 3s"
	}))
	return newAdminEnvOn(t, c, "cancel"), newRawBroker(t, c)
}

// sendScheduled sends body to topic, delayed by set, and returns its message id.
func (e *adminEnv) sendScheduled(topic, body string, set func(*message.Message)) string {
	m := message.NewMessage(topic, []byte(body))
	set(m)
	res, err := e.p.Send(adminCtx(e.t), m)
	require.NoError(e.t, err)
	require.NotEmpty(e.t, res.MsgID)
	return res.MsgID
}

// queueBodies are the bodies stored in queue 0 of topic.
func queueBodies(r *rawBroker, topic string) []string {
	var out []string
	for _, rec := range r.records(topic, 0) {
		out = append(out, string(rec.Body))
	}
	return out
}

func TestCancelScheduled(t *testing.T) {
	e, raw := newCancelEnv(t)
	for name, schedule := range map[string]func(time.Time) func(*message.Message){
		"timer": func(at time.Time) func(*message.Message) {
			return func(m *message.Message) { m.SetDeliverAt(at) }
		},
		"delay level": func(time.Time) func(*message.Message) {
			return func(m *message.Message) { m.SetDelayLevel(1) }
		},
	} {
		t.Run(name, func(t *testing.T) {
			topic := "Cancel" + map[string]string{"timer": "Timer", "delay level": "Level"}[name]
			e.createTopic(topic, 1)
			at := time.Now().Add(time.Second)
			cancelled := e.sendScheduled(topic, "cancelled", schedule(at))
			res, err := e.a.CancelScheduled(adminCtx(t), topic, cancelled)
			require.NoError(t, err)
			require.Equal(t, &CancelResult{Broker: e.broker, Topic: topic}, res)

			res, err = e.a.CancelScheduled(adminCtx(t), "", cancelled)
			require.NoError(t, err, "without a topic every master is asked")
			require.True(t, res.AlreadyCancelled, "a second cancel says so")

			// A message scheduled for the same time or later, not cancelled: once it is
			// delivered, the loop has passed the cancelled one.
			kept := e.sendScheduled(topic, "kept", schedule(at))
			testutil.Eventually(t, 20*time.Second, func() bool { return raw.maxOffset(topic, 0) >= 1 }, "the kept message delivered")
			require.Equal(t, []string{"kept"}, queueBodies(raw, topic), "the cancelled message is never delivered")

			_, err = e.a.CancelScheduled(adminCtx(t), topic, kept)
			require.ErrorIs(t, err, ErrAlreadyDelivered, "cancelling a delivered message says so")
		})
	}

	_, err := e.a.CancelScheduled(adminCtx(t), "", "0A0000010000000000000000DEADBEEF")
	require.ErrorIs(t, err, ErrScheduledNotFound)
	e.createTopic("CancelPlain", 1)
	plain := e.sendScheduled("CancelPlain", "plain", func(*message.Message) {})
	_, err = e.a.CancelScheduled(adminCtx(t), "CancelPlain", plain)
	require.ErrorIs(t, err, ErrAlreadyDelivered, "a message in its topic is delivered")
	_, err = e.a.CancelScheduled(adminCtx(t), "", plain)
	require.ErrorIs(t, err, ErrScheduledNotFound, "without the topic the broker cannot tell")
}

func TestCancelScheduledSurvivesRestart(t *testing.T) {
	e, raw := newCancelEnv(t)
	const topic = "CancelRestart"
	e.createTopic(topic, 1)
	at := time.Now().Add(2 * time.Second)
	timer := e.sendScheduled(topic, "cancelled timer", func(m *message.Message) { m.SetDeliverAt(at) })
	level := e.sendScheduled(topic, "cancelled level", func(m *message.Message) { m.SetDelayLevel(2) })
	for _, id := range []string{timer, level} {
		_, err := e.a.CancelScheduled(adminCtx(t), topic, id)
		require.NoError(t, err)
	}

	e.c.RestartBroker(t)
	keptTimer := e.sendScheduled(topic, "kept timer", func(m *message.Message) { m.SetDeliverAt(at) })
	e.sendScheduled(topic, "kept level", func(m *message.Message) { m.SetDelayLevel(2) })
	testutil.Eventually(t, 30*time.Second, func() bool { return raw.maxOffset(topic, 0) >= 2 }, "the kept messages delivered")
	require.ElementsMatch(t, []string{"kept timer", "kept level"}, queueBodies(raw, topic),
		"the cancellations survived the restart")

	res, err := e.a.CancelScheduled(adminCtx(t), topic, timer)
	require.NoError(t, err)
	require.True(t, res.AlreadyCancelled, "the restarted broker knows the cancellation")
	_, err = e.a.CancelScheduled(adminCtx(t), topic, keptTimer)
	require.ErrorIs(t, err, ErrAlreadyDelivered)
}
