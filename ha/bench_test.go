package ha

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/remoting"
)

// BenchmarkReplication1KiB measures end-to-end replication throughput: 1 KiB records
// appended to a master log (64 MiB segments, real files) and streamed over 127.0.0.1 to
// a slave; the clock stops when the slave has acknowledged the last byte.
func BenchmarkReplication1KiB(b *testing.B) {
	benchReplication(b, func(ml, sl *commitlog.Log) (*Master, *Slave) {
		m := newMaster(b, ml)
		return m, newSlave(b, sl, m.Addr().String())
	})
}

// BenchmarkReplication1KiBTLS is BenchmarkReplication1KiB with an authenticated slave
// over TLS (enforcing).
func BenchmarkReplication1KiBTLS(b *testing.B) {
	benchReplication(b, func(ml, sl *commitlog.Log) (*Master, *Slave) {
		m := newAuthMaster(b, ml, &remoting.TLSConfig{Mode: remoting.TLSEnforcing, Config: testServerTLS(b)})
		client := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // a test's self-signed certificate
		return m, newAuthSlave(b, sl, m.Addr().String(), admin, "broker-a", client)
	})
}

func benchReplication(b *testing.B, start func(ml, sl *commitlog.Log) (*Master, *Slave)) {
	const segSize = 64 << 20
	ml, sl := openLog(b, b.TempDir(), segSize), openLog(b, b.TempDir(), segSize)
	defer func() { _ = ml.Close(); _ = sl.Close() }()
	m, s := start(ml, sl)
	defer func() { _ = m.Close() }()
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
