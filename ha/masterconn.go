package ha

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/commitlog"
)

// masterConn is one slave connection on the master: a reader goroutine taking offset
// reports and a writer goroutine streaming frames.
type masterConn struct {
	m    *Master
	raw  net.Conn  // the accepted connection: closing it ends everything
	conn net.Conn  // what the writer writes to (raw, or TLS over it), set by handshake
	rd   io.Reader // what the reader reads (conn, after any bytes the handshake peeked)
	log  zerolog.Logger
	kick chan struct{} // the log grew (Master.Notify)

	first chan firstReport // the first report: where to start
	ack   atomic.Int64     // the last report
	done  chan struct{}
	once  sync.Once
	slave bool // counted in Master.mu.slaves; guarded by Master.mu

	tls     bool   // the connection runs TLS (set by handshake)
	account string // the access key the slave proved (set by handshake)

	// Controller mode (set by handshake): the identity hello's broker id and epoch, and
	// the writer's samples of the log's end (peers.go). peerID 0: anonymous.
	peerID  int64
	epoch   int32
	samples *sampleRing
}

func newMasterConn(m *Master, conn net.Conn) *masterConn {
	return &masterConn{
		m:     m,
		raw:   conn,
		log:   m.log.With().Str("slave", conn.RemoteAddr().String()).Logger(),
		kick:  make(chan struct{}, 1),
		first: make(chan firstReport, 1),
		done:  make(chan struct{}),
	}
}

// firstReport is the slave's first offset report as the reader judged it: the writer
// starts there, or, when the slave is ahead of the master, tells it so and ends.
type firstReport struct {
	off, end int64 // the slave's offset; the master's end when it was read
	ahead    bool
}

// run serves the connection until either side fails, then closes it.
func (c *masterConn) run() {
	defer c.m.remove(c)
	if err := c.handshake(); err != nil {
		_ = c.raw.Close()
		select {
		case <-c.m.stop:
		default:
			// Anyone can connect: one line a second, with the count held back.
			ok, suppressed := c.m.refusals.Allow()
			if !ok {
				return
			}
			ev := c.log.Warn()
			if errors.Is(err, io.EOF) { // closed before a word: a port probe
				ev = c.log.Info()
			}
			ev.Err(err).Int64("suppressed", suppressed).Msg("slave refused: connection closed")
		}
		return
	}
	if !c.m.register(c) {
		_ = c.raw.Close()
		return
	}
	c.log.Info().Bool("tls", c.tls).Str("account", c.account).Int64("brokerId", c.peerID).Int32("epoch", c.epoch).
		Msg("slave connected")
	var wg sync.WaitGroup
	var rerr, werr error
	wg.Go(func() { rerr = c.readLoop(); c.shutdown() })
	wg.Go(func() { werr = c.writeLoop(); c.shutdown() })
	wg.Wait()
	err := rerr
	if err == nil || errors.Is(err, net.ErrClosed) {
		err = werr
	}
	select {
	case <-c.m.stop:
		return
	default:
	}
	ev := c.log.Info()
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		ev = c.log.Warn().Err(err)
	}
	ev.Int64("acked", c.ack.Load()).Msg("slave disconnected")
}

func (c *masterConn) shutdown() {
	c.once.Do(func() {
		close(c.done)
		_ = c.raw.Close()
	})
}

// readLoop takes the slave's offset reports.
func (c *masterConn) readLoop() error {
	var (
		dec   ReportDecoder
		buf   = make([]byte, 4096)
		first = true
	)
	for {
		if err := c.conn.SetReadDeadline(time.Now().Add(c.m.opts.IdleTimeout)); err != nil {
			return fmt.Errorf("ha: set read deadline: %w", err)
		}
		n, err := c.rd.Read(buf)
		if n > 0 {
			off, ok, derr := dec.Feed(buf[:n])
			if derr != nil {
				return derr
			}
			if ok {
				// Guard (apache/rocketmq#3015): a slave cannot hold more than the master,
				// and its report must never satisfy a SYNC wait.
				end := c.m.opts.Log.MaxOffset()
				ahead := off > end
				if first {
					first = false
					c.first <- firstReport{off: off, end: end, ahead: ahead}
					if ahead {
						<-c.done // the writer tells the slave, then ends the connection
					}
				}
				if ahead {
					return fmt.Errorf("%w: slave reports offset %d beyond the master's end %d (its log is ahead: refusing it)",
						ErrProtocol, off, end)
				}
				c.ack.Store(off)
				if c.peerID != 0 {
					c.m.peerAcked(c, off, end)
				}
				c.m.acked(off)
			}
		}
		if err != nil {
			return fmt.Errorf("ha: read offset report: %w", err)
		}
	}
}

// writeLoop streams the log from the slave's first report on, with heartbeats.
func (c *masterConn) writeLoop() error {
	var first firstReport
	select {
	case first = <-c.first:
	case <-c.done:
		return nil
	}
	var hdr [FrameHeaderSize]byte
	if first.ahead {
		// A frame at the master's end, below the slave's: the slave knows it diverged
		// (ErrDiverged) rather than guessing from a closed connection.
		err := c.write(hdr[:], FrameHeader{Offset: first.end}, nil)
		return errors.Join(fmt.Errorf("%w: slave reports offset %d beyond the master's end %d (its log is ahead: refusing it)",
			ErrProtocol, first.off, first.end), err)
	}
	next := first.off
	if start := c.m.opts.Log.MinOffset(); next < start {
		if next != 0 {
			// The bytes the slave needs are deleted: a frame at the master's start tells
			// it so (ErrBehindMaster), rather than a bare close.
			err := c.write(hdr[:], FrameHeader{Offset: start}, nil)
			return errors.Join(fmt.Errorf("%w: slave asks for offset %d, the master's log starts at %d",
				ErrProtocol, next, start), err)
		}
		// An empty slave starts at the master's oldest segment (RocketMQ starts a new
		// slave at the master's newest one; Ferry copies everything the master keeps).
		next = start
	}
	c.log.Info().Int64("from", next).Msg("streaming the commit log")
	var (
		lastWrite time.Time
		poll      = time.NewTimer(time.Hour)
	)
	defer poll.Stop()
	for {
		select {
		case <-c.done:
			return nil
		default:
		}
		if next < c.m.opts.Log.MaxOffset() {
			n, err := c.send(next, hdr[:])
			if err != nil {
				return err
			}
			next += int64(n)
			lastWrite = time.Now()
			c.sample()
			continue
		}
		if time.Since(lastWrite) >= c.m.opts.HeartbeatInterval {
			if err := c.write(hdr[:], FrameHeader{Offset: next}, nil); err != nil {
				return err
			}
			lastWrite = time.Now()
		}
		wait := min(c.m.opts.PollInterval, c.m.opts.HeartbeatInterval-time.Since(lastWrite))
		poll.Reset(max(wait, time.Millisecond))
		select {
		case <-c.kick:
			poll.Stop()
		case <-poll.C:
		case <-c.done:
			return nil
		}
	}
}

// send writes one frame of at most MaxFrame bytes from off, straight from the mapped
// segment (writev of header and view), and returns the body size.
func (c *masterConn) send(off int64, hdr []byte) (int, error) {
	v, err := c.m.opts.Log.Read(off, c.m.opts.MaxFrame)
	if err != nil {
		if errors.Is(err, commitlog.ErrOutOfRange) {
			return 0, nil
		}
		return 0, fmt.Errorf("ha: read commit log at %d: %w", off, err)
	}
	defer v.Release()
	b := v.Bytes()
	return len(b), c.write(hdr, FrameHeader{Offset: off, Size: int32(len(b))}, b)
}

func (c *masterConn) write(hdr []byte, h FrameHeader, body []byte) error {
	PutFrameHeader(hdr, h)
	if err := c.conn.SetWriteDeadline(time.Now().Add(c.m.opts.IdleTimeout)); err != nil {
		return fmt.Errorf("ha: set write deadline: %w", err)
	}
	bufs := net.Buffers{hdr}
	if len(body) > 0 {
		bufs = append(bufs, body)
	}
	if _, err := bufs.WriteTo(c.conn); err != nil {
		return fmt.Errorf("ha: write frame at %d: %w", h.Offset, err)
	}
	return nil
}
