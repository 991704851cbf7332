package client

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/testutil"
)

// TestBroadcastingEveryMemberGetsEverything runs two broadcasting members of one group:
// each owns every queue of the topic (and no retry queue) and gets every message once,
// and the broker stores no offset of the group. Then a is closed, more messages are sent
// and a member with a's offsets directory resumes where a stopped: it gets only the new
// messages. Then its offsets file is corrupted: the next member logs it, sets the file
// aside, starts from the first offset (ConsumeFrom) — every message again — and on Close
// writes a good file.
func TestBroadcastingEveryMemberGetsEverything(t *testing.T) {
	const topic, group = "BroadcastTopic", "cg-broadcast"
	c := testutil.StartCluster(t)
	raw := newRawBroker(t, c)
	raw.createTopic(topic, 4)
	pcl := newMember(t, c, "broadcast-producer")
	p, err := pcl.NewProducer("pg-broadcast")
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	dirA, dirB := t.TempDir(), t.TempDir()
	d := newDeliveries()
	clA := newMember(t, c, "broadcast-a")
	a := startConsumer(t, clA, group, topic, "*", d.handler("a", nil), WithBroadcasting(), WithOffsetsDir(dirA))
	b := startConsumer(t, newMember(t, c, "broadcast-b"), group, topic, "*", d.handler("b", nil), WithBroadcasting(),
		WithOffsetsDir(dirB), WithCommitInterval(50*time.Millisecond))
	for _, pc := range []*PushConsumer{a, b} {
		require.Len(t, pc.Queues(), 4, "a broadcasting member owns every queue and no retry queue")
	}

	perConsumer := func(bodies []string) map[string]map[string]int {
		out := map[string]map[string]int{}
		for _, body := range bodies {
			for _, del := range d.of(body) {
				if out[del.consumer] == nil {
					out[del.consumer] = map[string]int{}
				}
				out[del.consumer][body]++
			}
		}
		return out
	}
	gotAll := func(consumer string, bodies []string) bool {
		return len(perConsumer(bodies)[consumer]) == len(bodies)
	}
	once := func(consumer string, bodies []string) {
		t.Helper()
		got := perConsumer(bodies)[consumer]
		require.Len(t, got, len(bodies), "%s got every message", consumer)
		for body, n := range got {
			require.Equal(t, 1, n, "%s got %s once", consumer, body)
		}
	}

	first := names("first-", 200)
	sendAll(t, p, topic, first, nil)
	testutil.Eventually(t, 30*time.Second, func() bool { return gotAll("a", first) && gotAll("b", first) }, "a and b got the first batch")
	once("a", first)
	once("b", first)
	for q := range int32(4) {
		require.EqualValues(t, -1, raw.committed(group, topic, q), "no broker offset for a broadcasting group")
	}
	path := filepath.Join(dirB, group+offsetsExt)
	testutil.Eventually(t, 10*time.Second, func() bool {
		data, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		offs, err := decodeOffsets(data, group)
		require.NoError(t, err)
		var sum int64
		for _, off := range offs {
			sum += off
		}
		return sum == int64(len(first))
	}, "b's periodic commit wrote its offsets file")

	// a restarts: only the new messages.
	require.NoError(t, a.Close())
	second := names("second-", 100)
	sendAll(t, p, topic, second, nil)
	d2 := newDeliveries()
	a2 := startConsumer(t, clA, group, topic, "*", d2.handler("a2", nil), WithBroadcasting(), WithOffsetsDir(dirA))
	testutil.Eventually(t, 30*time.Second, func() bool { return d2.got(second, 1) == len(second) && gotAll("b", second) }, "a2 and b got the second batch")
	require.Zero(t, d2.got(first, 1), "a2 resumed from a's offsets: nothing of the first batch again")
	for _, body := range second {
		require.Len(t, d2.of(body), 1)
	}
	once("b", append(first, second...))
	require.NoError(t, a2.Close())

	// A corrupt file: logged, set aside, everything again from the first offset.
	pathA := filepath.Join(dirA, group+offsetsExt)
	data, err := os.ReadFile(pathA)
	require.NoError(t, err)
	data[len(data)/2] ^= 0x40
	require.NoError(t, os.WriteFile(pathA, data, 0o600))
	var logs testkit.Buffer
	clA3, err := New(WithNameServers(c.NamesrvAddr), WithInstanceName("broadcast-a3"), WithLogger(zerolog.New(&logs)))
	require.NoError(t, err)
	defer func() { require.NoError(t, clA3.Close()) }()
	d3 := newDeliveries()
	all := append(first, second...)
	a3 := startConsumer(t, clA3, group, topic, "*", d3.handler("a3", nil), WithBroadcasting(), WithOffsetsDir(dirA))
	require.Contains(t, logs.String(), "offsets file unreadable")
	require.FileExists(t, pathA+".broken")
	testutil.Eventually(t, 30*time.Second, func() bool { return d3.got(all, 1) == len(all) }, "a3 consumed everything again")
	require.NoError(t, a3.Close())
	data, err = os.ReadFile(pathA)
	require.NoError(t, err)
	offs, err := decodeOffsets(data, group)
	require.NoError(t, err)
	require.Len(t, offs, 4)
	for mq, off := range offs {
		require.Equal(t, raw.maxOffset(topic, mq.QueueID), off, "%s written at its end on Close", mq)
	}
}

// TestOffsetsFileFormat: a table survives encoding; every truncation and every flipped
// bit of a file is detected; a file of another group is refused.
func TestOffsetsFileFormat(t *testing.T) {
	offs := map[MessageQueue]int64{
		{Topic: "T", BrokerName: "broker-a", QueueID: 0}: 0,
		{Topic: "T", BrokerName: "broker-a", QueueID: 3}: 1 << 40,
		{Topic: "Ü", BrokerName: "broker-b", QueueID: 1}: 7,
	}
	data := encodeOffsets("g", offs)
	got, err := decodeOffsets(data, "g")
	require.NoError(t, err)
	require.Equal(t, offs, got)
	require.Equal(t, data, encodeOffsets("g", got), "the encoding is deterministic")
	empty, err := decodeOffsets(encodeOffsets("g", nil), "g")
	require.NoError(t, err)
	require.Empty(t, empty)

	for n := range len(data) {
		_, err := decodeOffsets(data[:n], "g")
		require.ErrorIs(t, err, errBadOffsets, "cut at %d", n)
	}
	for i := range data {
		for bit := range 8 {
			bad := bytes.Clone(data)
			bad[i] ^= 1 << bit
			_, err := decodeOffsets(bad, "g")
			require.ErrorIs(t, err, errBadOffsets, "byte %d bit %d flipped", i, bit)
		}
	}
	_, err = decodeOffsets(data, "other")
	require.ErrorIs(t, err, errBadOffsets)
	_, err = decodeOffsets(append(bytes.Clone(data), 0), "g")
	require.ErrorIs(t, err, errBadOffsets, "a trailing byte")
}

// TestLocalOffsetsStore: load of a missing file, write and reload, writes only when
// changed, temporary files of a crashed write removed, an unreadable file set aside, and
// an offsets directory that cannot be made is an error.
func TestLocalOffsetsStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "dir")
	mq := MessageQueue{Topic: "T", BrokerName: "b", QueueID: 2}
	l := newLocalOffsets(dir, "%RETRY%g|x", zerolog.Nop())
	require.NoError(t, l.load())
	require.Equal(t, filepath.Join(dir, "%25RETRY%25g%7Cx.offsets"), l.path, "the group is path-escaped")
	_, ok := l.get(mq)
	require.False(t, ok)
	require.NoError(t, l.persist())
	require.NoFileExists(t, l.path, "nothing to write")

	l.set(mq, 42)
	require.NoError(t, l.persist())
	st, err := os.Stat(l.path)
	require.NoError(t, err)
	l.set(mq, 42)
	require.NoError(t, os.Chtimes(l.path, time.Unix(1, 0), time.Unix(1, 0)))
	require.NoError(t, l.persist())
	st2, err := os.Stat(l.path)
	require.NoError(t, err)
	require.Equal(t, time.Unix(1, 0), st2.ModTime(), "unchanged: not written again")
	require.Equal(t, st.Size(), st2.Size())

	stale := l.path + ".tmp123"
	require.NoError(t, os.WriteFile(stale, []byte("half"), 0o600))
	l2 := newLocalOffsets(dir, "%RETRY%g|x", zerolog.Nop())
	require.NoError(t, l2.load())
	off, ok := l2.get(mq)
	require.True(t, ok)
	require.EqualValues(t, 42, off)
	require.NoFileExists(t, stale, "a crashed write's temporary file is removed")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the offsets file")

	require.NoError(t, os.WriteFile(l.path, []byte("{not an offsets file"), 0o600))
	l3 := newLocalOffsets(dir, "%RETRY%g|x", zerolog.Nop())
	require.NoError(t, l3.load())
	_, ok = l3.get(mq)
	require.False(t, ok, "an unreadable file counts as no offsets")
	require.FileExists(t, l.path+".broken")

	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	err = newLocalOffsets(filepath.Join(file, "sub"), "g", zerolog.Nop()).load()
	require.Error(t, err)
	require.False(t, errors.Is(err, errBadOffsets))
}
