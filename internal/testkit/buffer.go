package testkit

import "sync"

// Buffer is an io.Writer safe for concurrent use that keeps what is written to it: the
// log sink of servers a test reads while they run. With Max set it keeps only the last
// Max bytes (a child process's log, shown when something fails). The zero value is an
// empty, unbounded buffer.
type Buffer struct {
	// Max bounds the bytes kept, the newest; 0 keeps everything.
	Max int

	mu  sync.Mutex
	buf []byte
}

// Write appends p (dropping the oldest bytes beyond Max); it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; b.Max > 0 && over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns what the buffer holds.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Reset empties the buffer.
func (b *Buffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = b.buf[:0]
}
