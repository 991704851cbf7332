package transaction

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
)

func opProps(t testing.TB, outcome string) []byte {
	props, err := message.AppendProperty(nil, message.PropertyTags, OpTag)
	require.NoError(t, err)
	if outcome != "" {
		props, err = message.AppendProperty(props, PropertyOpOutcome, outcome)
		require.NoError(t, err)
	}
	return props
}

func TestDecodeOpEntry(t *testing.T) {
	for _, tc := range []struct {
		body, outcome string
		want          opEntry
		err           bool
	}{
		{body: "17", outcome: OutcomeCommit, want: opEntry{offsets: []int64{17}, outcome: outcomeCommit}},
		{body: "17,42", outcome: OutcomeRollback, want: opEntry{offsets: []int64{17, 42}, outcome: outcomeRollback}},
		{body: "3,", outcome: OutcomeDiscard, want: opEntry{offsets: []int64{3}, outcome: outcomeDiscard}},
		// RocketMQ 4.x and 5.x entries: no outcome.
		{body: "0", want: opEntry{offsets: []int64{0}, outcome: outcomeResolved}},
		{body: "1,2,3,", want: opEntry{offsets: []int64{1, 2, 3}, outcome: outcomeResolved}},
		{body: ",,5,,", outcome: "SOMETHING", want: opEntry{offsets: []int64{5}, outcome: outcomeResolved}},
		{body: "", err: true},
		{body: ",", err: true},
		{body: "-1", err: true},
		{body: "1 ", err: true},
		{body: "9223372036854775808", err: true},
		{body: "9223372036854775807", want: opEntry{offsets: []int64{1<<63 - 1}, outcome: outcomeResolved}},
	} {
		got, err := decodeOpEntry([]byte(tc.body), opProps(t, tc.outcome))
		if tc.err {
			require.ErrorIs(t, err, errBadOpEntry, tc.body)
			continue
		}
		require.NoError(t, err, tc.body)
		assert.Equal(t, tc.want, got, tc.body)
	}
	_, err := decodeOpEntry([]byte("1"), nil)
	require.ErrorIs(t, err, errBadOpEntry, "no tag d")
	assert.Equal(t, "1,22,333", string(appendOpBody(nil, []int64{1, 22, 333})))
}

func TestDecodeCommitIntent(t *testing.T) {
	props := func(value string) []byte {
		p := opProps(t, OutcomeCommitting)
		if value != "" {
			var err error
			p, err = message.AppendProperty(p, PropertyCommitIntent, value)
			require.NoError(t, err)
		}
		return p
	}
	in := commitIntent{origin: 17, phy: 40960, queueID: 3, queueOffset: 118}
	v := string(appendIntentValue(nil, &in, []byte("Orders")))
	assert.Equal(t, "17,40960,3,118,Orders", v)
	got, err := decodeOpEntry(nil, props(v))
	require.NoError(t, err)
	in.topic = "Orders"
	assert.Equal(t, opEntry{offsets: []int64{17}, intent: &in}, got)
	// The body is not read: RocketMQ's reading of it must find no half offset.
	again, err := decodeOpEntry([]byte("99"), props(v))
	require.NoError(t, err)
	assert.Equal(t, got, again)

	got, err = decodeOpEntry(nil, props("1,2,0,0,%RETRY%a|b,c"))
	require.NoError(t, err)
	assert.Equal(t, "%RETRY%a|b,c", got.intent.topic, "the topic is the rest of the value")
	for _, bad := range []string{"", "17,40960,3,118", "17,40960,3,118,", "-1,1,0,0,T", "1,2,2147483648,0,T",
		"1,x,0,0,T", "1,,0,0,T"} {
		_, err := decodeOpEntry(nil, props(bad))
		require.ErrorIs(t, err, errBadOpEntry, "%q", bad)
	}
}

func TestCursorsRoundTrip(t *testing.T) {
	c := cursors{half: 123456789, op: 42}
	b := encodeCursors(c)
	require.Len(t, b, cursorSize)
	got, err := decodeCursors(b)
	require.NoError(t, err)
	assert.Equal(t, c, got)
	for i := range b {
		bad := bytes.Clone(b)
		bad[i] ^= 0x40
		_, err := decodeCursors(bad)
		require.ErrorIs(t, err, errBadCursor, "flipped byte %d", i)
	}
	_, err = decodeCursors(b[:cursorSize-1])
	require.ErrorIs(t, err, errBadCursor)
}

func FuzzDecodeOpEntry(f *testing.F) {
	f.Add([]byte("17"), opProps(f, OutcomeCommit))
	f.Add([]byte("1,2,3,"), opProps(f, ""))
	f.Add([]byte("x"), []byte("TAGS\x01d"))
	f.Fuzz(func(t *testing.T, body, props []byte) {
		e, err := decodeOpEntry(body, props)
		if err != nil {
			return
		}
		require.NotEmpty(t, e.offsets)
		again, err := decodeOpEntry(appendOpBody(nil, e.offsets), props)
		require.NoError(t, err)
		require.Equal(t, e, again)
	})
}

func FuzzDecodeCursors(f *testing.F) {
	f.Add(encodeCursors(cursors{half: 1, op: 2}))
	f.Add([]byte("FTXC"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCursors(b)
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, c.half, int64(0))
		require.GreaterOrEqual(t, c.op, int64(0))
		require.Equal(t, b, encodeCursors(c))
	})
}

func FuzzParseHalf(f *testing.F) {
	props, err := message.EncodeProperties(map[string]string{
		message.PropertyProducerGroup: "G", message.PropertyRealTopic: "T", message.PropertyRealQueueID: "1",
		message.PropertyTransactionPreparedQueueOffset: "3", message.PropertyTransactionCheckTimes: "2",
		PropertyNextCheckTime: "99", PropertyFirstStoreTime: "5", message.PropertyCheckImmunityTimeInSeconds: "60",
	})
	require.NoError(f, err)
	rec := message.Record{Topic: []byte(halfTopic), QueueOffset: 7, Body: []byte("b"), Properties: props}
	b, err := rec.AppendTo(nil)
	require.NoError(f, err)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, _, err := message.DecodeRecord(b)
		if err != nil {
			return
		}
		h := parseHalf(&rec)
		require.LessOrEqual(t, h.origin, h.offset)
		require.GreaterOrEqual(t, h.label, 0)
		require.GreaterOrEqual(t, h.immunityMs, int64(0))
		if h.bad == "" {
			require.NotEmpty(t, h.group)
		}
	})
}
