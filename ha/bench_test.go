package ha

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
)

// BenchmarkReplication1KiB measures end-to-end replication throughput: 1 KiB records
// appended to a master log (64 MiB segments, real files) and streamed over 127.0.0.1 to
// a slave; the clock stops when the slave has acknowledged the last byte.
func BenchmarkReplication1KiB(b *testing.B) {
	const segSize = 64 << 20
	ml, sl := openLog(b, b.TempDir(), segSize), openLog(b, b.TempDir(), segSize)
	defer func() { _ = ml.Close(); _ = sl.Close() }()
	m := newMaster(b, ml)
	defer func() { _ = m.Close() }()
	s := newSlave(b, sl, m.Addr().String())
	defer func() { _ = s.Close() }()
	recs := []message.Record{record(1, 1024)}
	b.SetBytes(int64(recs[0].Size()))
	b.ResetTimer()
	for i := range b.N {
		if _, err := ml.Append(recs, false); err != nil {
			b.Fatal(err)
		}
		if i%64 == 0 {
			m.Notify()
		}
	}
	m.Notify()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(b, waitAck(ctx, m, ml.MaxOffset()))
}
