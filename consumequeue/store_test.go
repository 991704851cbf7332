package consumequeue

import (
	"errors"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestStoreOpenRangeDelete(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			opts := testOpts(c.fs, c.root, 4)
			s := openStore(t, opts)
			_, err := s.Queue("A", 0, false)
			require.ErrorIs(t, err, ErrQueueNotFound)
			for _, bad := range []string{"", ".", "..", "a/b", "a\\b"} {
				_, err := s.Queue(bad, 0, true)
				require.ErrorIs(t, err, ErrInvalidTopic, bad)
			}
			_, err = s.Queue("A", -1, true)
			require.Error(t, err)

			appendN(t, mustQueue(t, s, "B", 1), 0, 3)
			appendN(t, mustQueue(t, s, "A", 2), 0, 6)
			appendN(t, mustQueue(t, s, "A", 0), 0, 1)
			mustQueue(t, s, "C", 0) // never written: no files
			require.Equal(t, int64(5100), s.MaxPhysicalOffset())
			require.NoError(t, s.Close())
			_, err = s.Queue("A", 0, false)
			require.ErrorIs(t, err, ErrClosed)

			// Junk the loader must skip.
			require.NoError(t, c.fs.MkdirAll(filepath.Join(c.root, "A", "x1")))
			require.NoError(t, c.fs.MkdirAll(filepath.Join(c.root, "A", "01")))

			s = openStore(t, opts)
			var seen []string
			s.Range(func(topic string, id int32, q *Queue) bool {
				require.Equal(t, topic, q.Topic())
				require.Equal(t, id, q.QueueID())
				seen = append(seen, q.String())
				return true
			})
			require.Equal(t, []string{"A/0", "A/2", "B/1"}, seen)
			n := 0
			s.Range(func(string, int32, *Queue) bool { n++; return false })
			require.Equal(t, 1, n)

			qa, err := s.Queue("A", 2, false)
			require.NoError(t, err)
			require.Equal(t, int64(6), qa.MaxOffset())
			require.NoError(t, s.TruncateByPhysical(1000))
			require.Equal(t, int64(1), qa.MaxOffset())
			files, err := s.DeleteBefore(1 << 30)
			require.NoError(t, err)
			require.Zero(t, files)
			require.Equal(t, int64(1), qa.MinOffset())

			require.NoError(t, s.DeleteTopic("A"))
			_, err = qa.Read(0, make([]Unit, 1))
			require.ErrorIs(t, err, ErrClosed)
			require.ErrorIs(t, qa.Append(1, unitFor(1)), ErrClosed)
			_, err = s.Queue("A", 2, false)
			require.ErrorIs(t, err, ErrQueueNotFound)
			ok, err := c.fs.Exists(filepath.Join(c.root, "A"))
			require.NoError(t, err)
			require.False(t, ok)
			require.NoError(t, s.DeleteTopic("A"), "deleting twice is harmless")
			require.NoError(t, s.Flush())
		})
	}
}

// TestConcurrentReadersAndWriter runs pull-like readers against the dispatcher-like writer,
// with segment rolls, flushes and start deletion in parallel (run with -race).
func TestConcurrentReadersAndWriter(t *testing.T) {
	for _, c := range bothFS(t) {
		t.Run(c.name, func(t *testing.T) {
			s := openStore(t, testOpts(c.fs, c.root, 64))
			q := mustQueue(t, s, "T", 0)
			const total = 3000
			var done atomic.Bool
			var wg sync.WaitGroup
			for r := range 4 {
				wg.Go(func() {
					buf := make([]Unit, 5+r)
					for from := int64(0); !done.Load() || from < q.MaxOffset(); {
						n, err := q.Read(from, buf)
						if errors.Is(err, ErrOffsetOutOfRange) {
							from = q.MinOffset()
							continue
						}
						if err != nil {
							t.Error(err)
							return
						}
						if n == 0 {
							runtime.Gosched() // caught up: let the writer run
						}
						for i := range n {
							if buf[i] != unitFor(from+int64(i)) {
								t.Errorf("offset %d: %+v", from+int64(i), buf[i])
								return
							}
						}
						from += int64(n)
					}
				})
			}
			wg.Go(func() {
				for !done.Load() {
					if err := s.Flush(); err != nil {
						t.Error(err)
					}
					if _, err := q.DeleteBefore(q.MaxOffset() * 1000 / 2); err != nil {
						t.Error(err)
					}
					time.Sleep(time.Millisecond) // paces the flusher between appends; asserts nothing
				}
			})
			for i := range int64(total) {
				require.NoError(t, q.Append(i, unitFor(i)))
			}
			done.Store(true)
			wg.Wait()
			require.Equal(t, int64(total), q.MaxOffset())
		})
	}
}
