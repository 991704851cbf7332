package message

import (
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOffsetMsgID(t *testing.T) {
	host := netip.MustParseAddrPort("192.168.0.1:10911")
	id := OffsetMsgID(host, 0x1234)
	require.Equal(t, "C0A80001"+"00002A9F"+"0000000000001234", id)
	require.Equal(t, "xx"+id, string(AppendOffsetMsgID([]byte("xx"), host, 0x1234)))

	gotHost, off, err := DecodeOffsetMsgID(id)
	require.NoError(t, err)
	require.Equal(t, host, gotHost)
	require.Equal(t, int64(0x1234), off)
	gotHost, off, err = DecodeOffsetMsgID(strings.ToLower(id))
	require.NoError(t, err, "lower case is accepted")
	require.Equal(t, host, gotHost)
	require.Equal(t, int64(0x1234), off)

	v6 := netip.MustParseAddrPort("[2001:db8::ff00:42:8329]:65535")
	id6 := OffsetMsgID(v6, -1)
	require.Len(t, id6, OffsetMsgIDLenV6)
	require.Equal(t, "20010DB8000000000000FF0000428329"+"0000FFFF"+"FFFFFFFFFFFFFFFF", id6)
	gotHost, off, err = DecodeOffsetMsgID(id6)
	require.NoError(t, err)
	require.Equal(t, v6, gotHost)
	require.Equal(t, int64(-1), off)

	// An IPv4-mapped IPv6 host keeps its 16-byte form, as in records.
	mapped := netip.MustParseAddrPort("[::ffff:10.0.0.1]:80")
	idm := OffsetMsgID(mapped, 7)
	require.Len(t, idm, OffsetMsgIDLenV6)
	gotHost, _, err = DecodeOffsetMsgID(idm)
	require.NoError(t, err)
	require.Equal(t, mapped, gotHost)

	require.Equal(t, "00000000000000000000000000000005", OffsetMsgID(netip.AddrPort{}, 5))
}

func TestDecodeOffsetMsgIDErrors(t *testing.T) {
	good := OffsetMsgID(netip.MustParseAddrPort("10.1.2.3:10911"), 99)
	for _, id := range []string{
		"",
		good[:31],
		good + "0",
		good + strings.Repeat("0", 23),
		good + strings.Repeat("0", 25),
		"G" + good[1:],
		good[:31] + "-",
		"0A010203" + "FFFFFFFF" + "0000000000000063", // port -1
		"0A010203" + "00010000" + "0000000000000063", // port 65536
	} {
		_, _, err := DecodeOffsetMsgID(id)
		require.ErrorIs(t, err, ErrBadMsgID, id)
	}
}

func TestAppendOffsetMsgIDDoesNotAllocate(t *testing.T) {
	buf := make([]byte, 0, OffsetMsgIDLenV6)
	host := netip.MustParseAddrPort("[2001:db8::1]:10911")
	require.Zero(t, testing.AllocsPerRun(100, func() {
		buf = AppendOffsetMsgID(buf[:0], host, 12345)
	}))
	id := string(buf)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if _, _, err := DecodeOffsetMsgID(id); err != nil {
			panic(err)
		}
	}))
}

// fakeClock is a settable clock for UniqKeyGenerator tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func TestUniqKeyLayout(t *testing.T) {
	clock := &fakeClock{now: time.Date(2024, 3, 5, 12, 0, 0, 123e6, time.UTC)}
	g := newUniqKeyGenerator(netip.MustParseAddr("192.168.0.2"), 0x12345, 0xCAFEBABE, clock.Now)
	id := g.Next()
	// IP | pid (int16 of 0x12345 = 0x2345) | value | ms since 2024-03-01 | counter
	require.Equal(t, "C0A80002"+"2345"+"CAFEBABE"+"172C9E7B"+"0001", id)
	require.Equal(t, "C0A80002"+"2345"+"CAFEBABE"+"172C9E7B"+"0002", g.Next())
	require.Equal(t, "p:C0A80002"+"2345"+"CAFEBABE"+"172C9E7B"+"0003", string(g.AppendNext([]byte("p:"))))

	// The last millisecond of January overflows int32, as in Java.
	clock.Set(time.Date(2024, 1, 31, 23, 59, 59, 999e6, time.UTC))
	g = newUniqKeyGenerator(netip.MustParseAddr("::ffff:192.168.0.2"), -1, 0, clock.Now)
	require.Equal(t, "C0A80002"+"FFFF"+"00000000"+"9FA523FF"+"0001", g.Next())

	// A new month restarts the time field.
	clock.Set(time.Date(2024, 2, 1, 0, 0, 1, 0, time.UTC))
	require.Equal(t, "C0A80002"+"FFFF"+"00000000"+"000003E8"+"0002", g.Next())

	// IPv6 ids are 56 characters.
	g = newUniqKeyGenerator(netip.MustParseAddr("2001:db8::1"), 1, 0, clock.Now)
	require.Len(t, g.Next(), 56)
	// The zero Addr is written as 0.0.0.0.
	g = newUniqKeyGenerator(netip.Addr{}, 1, 0, clock.Now)
	require.True(t, strings.HasPrefix(g.Next(), "00000000"+"0001"))

	// The public constructor uses the real clock and a random value.
	gen := NewUniqKeyGenerator(netip.MustParseAddr("10.0.0.1"), 77)
	rid := gen.Next()
	require.Len(t, rid, 32)
	require.True(t, strings.HasPrefix(rid, "0A000001"+"004D"), rid)
}

func TestUniqKeyUniqueUnderFrozenAndBackwardClock(t *testing.T) {
	clock := &fakeClock{now: time.Date(2024, 3, 5, 12, 0, 0, 0, time.UTC)}
	g := newUniqKeyGenerator(netip.MustParseAddr("10.0.0.1"), 1, 0, clock.Now)
	seen := make(map[string]struct{}, 300000)
	add := func(n int) {
		for range n {
			id := g.Next()
			_, dup := seen[id]
			require.False(t, dup, id)
			seen[id] = struct{}{}
		}
	}
	// Far more than 65,536 ids in one frozen millisecond: the counter wraps
	// and the time field must move on.
	add(200000)
	// The clock steps back by a second.
	clock.Set(clock.Now().Add(-time.Second))
	add(70000)
	// And forward again, onto already borrowed milliseconds.
	clock.Set(clock.Now().Add(time.Second + time.Millisecond))
	add(70000)
}

func TestUniqKeyConcurrent(t *testing.T) {
	g := NewUniqKeyGenerator(netip.MustParseAddr("10.0.0.1"), 1)
	const workers, per = 8, 5000
	out := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range per {
				out[w] = append(out[w], g.Next())
			}
		})
	}
	wg.Wait()
	seen := make(map[string]struct{}, workers*per)
	for _, ids := range out {
		for _, id := range ids {
			require.Len(t, id, 32)
			seen[id] = struct{}{}
		}
	}
	require.Len(t, seen, workers*per)
}
