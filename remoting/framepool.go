package remoting

import (
	"math/bits"
	"sync"
)

// Reusing request frames.
//
// A request's frame — the bytes after its length field — backs its decoded ext field
// values (strings that point into it) and its body, so it can be reused only once nothing
// looks at the request any more. The server reads every admitted frame of up to
// maxPooledFrame bytes into a buffer from a size-class pool; a frame whose code was
// registered with HandleReusingFrames goes back to the pool when its response has been
// written (its handler having returned it), every other frame is left to the garbage
// collector as before. On the send path this removes the largest allocation per message.
//
// Under the race detector (and in tests that ask) a recycled frame is overwritten with
// poisonByte first, so a
// handler that kept a string or slice of its request reads garbage in the tests at once,
// rather than another message's bytes some day in production.

const (
	// minPooledClass is the smallest size class: 2^9 = 512 bytes.
	minPooledClass = 9
	// maxPooledClass is the largest size class: 2^16 = 64 KiB (smallFrameSize).
	maxPooledClass = 16
	// maxPooledFrame is the largest frame read into a pooled buffer.
	maxPooledFrame = 1 << maxPooledClass
	// poisonByte overwrites recycled frames in race-detector builds.
	poisonByte = 0xEE
)

// framePool holds reusable frame buffers by power-of-two size class, and the Commands
// decoded from them.
type framePool struct {
	classes  [maxPooledClass - minPooledClass + 1]sync.Pool // of *[]byte with cap 2^(minPooledClass+i)
	commands sync.Pool                                      // of *Command, zeroed
}

// command returns a zero Command.
func (p *framePool) command() *Command {
	if cmd, ok := p.commands.Get().(*Command); ok {
		return cmd
	}
	return new(Command)
}

// putCommand zeroes cmd and keeps it for reuse.
func (p *framePool) putCommand(cmd *Command) {
	*cmd = Command{}
	p.commands.Put(cmd)
}

// sizeClass returns the index of the smallest class holding n bytes, or -1 when n is
// larger than maxPooledFrame.
func sizeClass(n int) int {
	if n > maxPooledFrame {
		return -1
	}
	if n <= 1<<minPooledClass {
		return 0
	}
	return bits.Len(uint(n-1)) - minPooledClass
}

// get returns a buffer of length n and, when n has a class, the box to give back to put
// (nil: the buffer is not pooled).
func (p *framePool) get(n int) ([]byte, *[]byte) {
	c := sizeClass(n)
	if c < 0 {
		return make([]byte, n), nil
	}
	box, ok := p.classes[c].Get().(*[]byte)
	if !ok {
		b := make([]byte, 0, 1<<(minPooledClass+c))
		box = &b
	}
	return (*box)[:n], box
}

// put returns a box obtained from get for reuse, overwritten with poisonByte first when
// poison is set.
func (p *framePool) put(box *[]byte, poison bool) {
	b := (*box)[:cap(*box)]
	c := sizeClass(len(b))
	if c < 0 || len(b) != 1<<(minPooledClass+c) {
		return
	}
	if poison {
		for i := range b {
			b[i] = poisonByte
		}
	}
	*box = b[:0]
	p.classes[c].Put(box)
}
