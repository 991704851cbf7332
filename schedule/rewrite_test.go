package schedule

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

func TestParseLevels(t *testing.T) {
	lv, err := ParseLevels(DefaultLevelString)
	require.NoError(t, err)
	require.Equal(t, DefaultOptions().Levels, lv)
	require.Len(t, lv, 18)

	lv, err = ParseLevels("  250ms\t3s 2m 1h 2d ")
	require.NoError(t, err)
	require.Equal(t, []time.Duration{250 * time.Millisecond, 3 * time.Second, 2 * time.Minute,
		time.Hour, 48 * time.Hour}, lv)

	for _, bad := range []string{"", "   ", "1x", "0s", "-1s", "s", "1.5s", "1", "10S", "366d",
		"99999999999999999999999s"} {
		_, err := ParseLevels(bad)
		require.Error(t, err, "%q", bad)
	}
}

func TestOptionsValidate(t *testing.T) {
	o := DefaultOptions()
	err := o.Validate()
	require.ErrorContains(t, err, "Dir")
	require.ErrorContains(t, err, "Store")
	o.Levels = []time.Duration{time.Second, 0}
	o.FlushInterval = 0
	o.MaxTimerDelay = 0
	o.Clock = nil
	err = o.Validate()
	for _, s := range []string{"Levels[1]", "FlushInterval", "MaxTimerDelay", "Clock"} {
		require.ErrorContains(t, err, s)
	}
}

// rewriteService returns a service whose clock stands still at nowMs.
func rewriteService(t *testing.T, nowMs int64, mutate func(*Options)) *Service {
	t.Helper()
	h := newHarness(t, DefaultLevelString)
	h.openStore()
	h.startService(func(o *Options) {
		o.Clock = func() time.Time { return time.UnixMilli(nowMs) }
		if mutate != nil {
			mutate(o)
		}
	})
	return h.svc
}

func TestRewrite(t *testing.T) {
	const now = int64(1_800_000_000_123)
	svc := rewriteService(t, now, nil)
	week := int64(7 * 24 * time.Hour / time.Millisecond)
	ms := func(v int64) string { return strconv.FormatInt(v, 10) }

	type want struct {
		rewritten bool
		topic     string
		queue     int32
		props     map[string]string // expected extra/changed properties
		gone      []string          // properties that must be absent
	}
	untouched := want{}
	cases := []struct {
		name    string
		sysFlag int32
		props   map[string]string
		want    want
	}{
		{"level", 0, map[string]string{"DELAY": "3"},
			want{true, protocol.ScheduleTopic, 2, map[string]string{"DELAY": "3", "REAL_TOPIC": "Orig", "REAL_QID": "5"}, nil}},
		{"level clamped", 0, map[string]string{"DELAY": "25"},
			want{true, protocol.ScheduleTopic, 17, map[string]string{"DELAY": "18", "REAL_TOPIC": "Orig", "REAL_QID": "5"}, nil}},
		{"level 18", 0, map[string]string{"DELAY": "18"},
			want{true, protocol.ScheduleTopic, 17, map[string]string{"DELAY": "18"}, nil}},
		{"level zero", 0, map[string]string{"DELAY": "0"}, untouched},
		{"level negative", 0, map[string]string{"DELAY": "-2"}, untouched},
		{"level garbage", 0, map[string]string{"DELAY": "abc"}, untouched},
		{"old real props replaced", 0, map[string]string{"DELAY": "2", "REAL_TOPIC": "Old", "REAL_QID": "9"},
			want{true, protocol.ScheduleTopic, 1, map[string]string{"REAL_TOPIC": "Orig", "REAL_QID": "5"}, nil}},
		{"prepared", message.TransactionPreparedType, map[string]string{"DELAY": "2"}, untouched},
		{"rollback", message.TransactionRollbackType, map[string]string{"DELAY": "2"}, untouched},
		{"commit", message.TransactionCommitType, map[string]string{"DELAY": "2"},
			want{true, protocol.ScheduleTopic, 1, map[string]string{"REAL_TOPIC": "Orig"}, nil}},
		{"inner batch", message.SysFlagInnerBatch, map[string]string{"DELAY": "2"}, untouched},
		{"need unwrap", message.SysFlagNeedUnwrap, map[string]string{"TIMER_DELAY_SEC": "5"}, untouched},
		{"timer absolute", 0, map[string]string{"TIMER_DELIVER_MS": ms(now + 5001)},
			want{true, protocol.TimerTopic, 0, map[string]string{"TIMER_OUT_MS": ms(now + 5001),
				"TIMER_DELIVER_MS": ms(now + 5001), "REAL_TOPIC": "Orig", "REAL_QID": "5"}, nil}},
		{"timer seconds", 0, map[string]string{"TIMER_DELAY_SEC": "3"},
			want{true, protocol.TimerTopic, 0, map[string]string{"TIMER_OUT_MS": ms(now + 3000)}, nil}},
		{"timer ms", 0, map[string]string{"TIMER_DELAY_MS": "1234"},
			want{true, protocol.TimerTopic, 0, map[string]string{"TIMER_OUT_MS": ms(now + 1234)}, nil}},
		{"timer exactly max", 0, map[string]string{"TIMER_DELAY_MS": ms(week)},
			want{true, protocol.TimerTopic, 0, map[string]string{"TIMER_OUT_MS": ms(now + week)}, nil}},
		{"seconds win over absolute", 0, map[string]string{"TIMER_DELAY_SEC": "2", "TIMER_DELIVER_MS": ms(now + 9000)},
			want{true, protocol.TimerTopic, 0, map[string]string{"TIMER_OUT_MS": ms(now + 2000)}, nil}},
		{"old timer out replaced", 0, map[string]string{"TIMER_DELAY_MS": "10", "TIMER_OUT_MS": "5"},
			want{true, protocol.TimerTopic, 0, map[string]string{"TIMER_OUT_MS": ms(now + 10)}, nil}},
		{"level wins over timer", 0, map[string]string{"DELAY": "1", "TIMER_DELIVER_MS": ms(now + 9000)},
			want{true, protocol.ScheduleTopic, 0, map[string]string{"DELAY": "1"}, []string{"TIMER_OUT_MS"}}},
		{"delay zero then timer", 0, map[string]string{"DELAY": "0", "TIMER_DELAY_MS": "10"},
			want{true, protocol.TimerTopic, 0, map[string]string{"TIMER_OUT_MS": ms(now + 10)}, nil}},
		{"timer past", 0, map[string]string{"TIMER_DELIVER_MS": ms(now - 1)}, untouched},
		{"timer now", 0, map[string]string{"TIMER_DELIVER_MS": ms(now)}, untouched},
		{"timer zero ms", 0, map[string]string{"TIMER_DELAY_MS": "0"}, untouched},
		{"timer negative s", 0, map[string]string{"TIMER_DELAY_SEC": "-5"}, untouched},
		{"timer huge negative s", 0, map[string]string{"TIMER_DELAY_SEC": "-9223372036854775808"}, untouched},
		{"plain", 0, nil, untouched},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			props := map[string]string{"UNIQ_KEY": "U1", "TAGS": "tagA"}
			for k, v := range c.props {
				props[k] = v
			}
			raw, err := message.EncodeProperties(props)
			require.NoError(t, err)
			rec := message.Record{Topic: []byte("Orig"), QueueID: 5, SysFlag: c.sysFlag, Properties: raw}
			out, rewritten, err := svc.Rewrite(&rec, make([]byte, 0, 8))
			require.NoError(t, err)
			require.Equal(t, c.want.rewritten, rewritten)
			require.Equal(t, rec.Properties, out)
			if !c.want.rewritten {
				require.Equal(t, "Orig", string(rec.Topic))
				require.Equal(t, int32(5), rec.QueueID)
				require.Equal(t, raw, out)
				return
			}
			require.Equal(t, c.want.topic, string(rec.Topic))
			require.Equal(t, c.want.queue, rec.QueueID)
			got := message.ParseProperties(out)
			require.Equal(t, "U1", got["UNIQ_KEY"])
			require.Equal(t, "tagA", got["TAGS"])
			for k, v := range c.want.props {
				require.Equal(t, v, got[k], k)
			}
			for _, k := range c.want.gone {
				require.NotContains(t, got, k)
			}
			// Every key once: replaced properties are not duplicated.
			n := 0
			for range message.PropertyPairs(out) {
				n++
			}
			require.Len(t, got, n)
		})
	}
}

func TestRewriteRejects(t *testing.T) {
	const now = int64(1_800_000_000_000)
	svc := rewriteService(t, now, func(o *Options) { o.MaxTimerDelay = time.Hour })
	for _, p := range []map[string]string{
		{"TIMER_DELAY_SEC": "3601"},
		{"TIMER_DELAY_MS": "3600001"},
		{"TIMER_DELIVER_MS": strconv.FormatInt(now+2*3600_000, 10)},
		{"TIMER_DELAY_SEC": "9223372036854775807"},
		{"TIMER_DELAY_MS": "9223372036854775807"},
	} {
		raw, err := message.EncodeProperties(p)
		require.NoError(t, err)
		rec := message.Record{Topic: []byte("Orig"), Properties: raw}
		_, rewritten, err := svc.Rewrite(&rec, nil)
		require.ErrorIs(t, err, ErrTimerTooFar, "%v", p)
		require.ErrorIs(t, err, ErrMessageIllegal)
		require.False(t, rewritten)
		require.Equal(t, raw, rec.Properties)
	}
	for _, v := range []string{"", "12a", "1.5", "99999999999999999999"} {
		raw, err := message.EncodeProperties(map[string]string{"TIMER_DELIVER_MS": v})
		require.NoError(t, err)
		rec := message.Record{Topic: []byte("Orig"), Properties: raw}
		_, _, err = svc.Rewrite(&rec, nil)
		require.ErrorIs(t, err, ErrBadTimerProperty, "%q", v)
	}
	raw, err := message.EncodeProperties(map[string]string{"DELAY": "1"})
	require.NoError(t, err)
	rec := message.Record{Topic: []byte("bad\x01topic"), Properties: raw}
	_, _, err = svc.Rewrite(&rec, nil)
	require.ErrorIs(t, err, ErrBadRealTopic)
	require.ErrorIs(t, err, ErrMessageIllegal)
}

func TestRewriteDoesNotAllocate(t *testing.T) {
	svc := rewriteService(t, 1_800_000_000_000, nil)
	for _, p := range []map[string]string{
		{"UNIQ_KEY": "U1", "TAGS": "t", "DELAY": "30", "REAL_TOPIC": "x"},
		{"UNIQ_KEY": "U1", "TAGS": "t", "TIMER_DELAY_SEC": "30"},
		{"UNIQ_KEY": "U1", "TAGS": "t", "TIMER_DELIVER_MS": "1800000005000"},
	} {
		raw, err := message.EncodeProperties(p)
		require.NoError(t, err)
		buf := make([]byte, 0, 512)
		topic := []byte("Orig")
		var rec message.Record
		allocs := testing.AllocsPerRun(200, func() {
			rec = message.Record{Topic: topic, QueueID: 1, Properties: raw}
			_, ok, err := svc.Rewrite(&rec, buf)
			if err != nil || !ok {
				panic("not rewritten")
			}
		})
		require.Zero(t, allocs, "%v", p)
	}
}

func TestTagsCode(t *testing.T) {
	code := TagsCoder([]time.Duration{time.Second, 5 * time.Second})
	sched := []byte(protocol.ScheduleTopic)
	c, ok := code(&message.Record{Topic: sched, QueueID: 1, StoreTimestamp: 1000})
	require.True(t, ok)
	require.Equal(t, int64(6000), c)
	c, _ = code(&message.Record{Topic: sched, QueueID: 7, StoreTimestamp: 1000})
	require.Equal(t, int64(6000), c, "queues past the levels use the highest level")

	raw, err := message.EncodeProperties(map[string]string{"TIMER_OUT_MS": "123456789", "TAGS": "x"})
	require.NoError(t, err)
	c, ok = code(&message.Record{Topic: []byte(protocol.TimerTopic), StoreTimestamp: 5, Properties: raw})
	require.True(t, ok)
	require.Equal(t, int64(123456789), c)
	c, ok = code(&message.Record{Topic: []byte(protocol.TimerTopic), StoreTimestamp: 5})
	require.True(t, ok)
	require.Equal(t, int64(5), c)

	_, ok = code(&message.Record{Topic: []byte("RealA"), StoreTimestamp: 5, Properties: raw})
	require.False(t, ok)
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "42": 42, " 7 ": 7, "+3": 3, "-9": -9,
		"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63} {
		got, ok := parseInt([]byte(in))
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "-", "+", "1e3", "0x10", "9223372036854775808", "-9223372036854775809",
		"12345678901234567890"} {
		_, ok := parseInt([]byte(in))
		require.False(t, ok, in)
	}
}
