package ha

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/internal/logging"
)

// ErrResync means a frame did not start at the slave's replica end; the slave drops the
// connection and reconnects, reporting its offset again.
var ErrResync = errors.New("ha: frame does not match the slave's end")

// ErrDiverged means the slave's log holds bytes its master does not have (the master
// answered the slave's first report with a frame at its own, lower, end: it was restored
// from an older copy or lost an unflushed tail). Appending the master's new writes after
// the slave's end would corrupt the slave, so the slave stops replicating for good; an
// operator moves the slave's data aside (it resyncs from empty) or restores the master.
var ErrDiverged = errors.New("ha: the slave's log is ahead of its master's: replication stopped")

// ErrBehindMaster means the master no longer has the bytes after the slave's end (it
// deleted the segments since the slave last replicated). The slave stops replicating for
// good; an operator moves the slave's data aside so it resyncs from the master's first
// segment.
var ErrBehindMaster = errors.New("ha: the master no longer has this slave's next bytes: replication stopped")

// Slave replicates a master's commit log into its own.
type Slave struct {
	opts SlaveOptions
	log  zerolog.Logger

	connected atomic.Bool
	frames    atomic.Int64
	failLog   logging.Sampler // the line for repeated failed connections to a dead master
	stop      chan struct{}
	stopped   chan struct{}   // closed when the loop ends (Close or ErrDiverged)
	ctx       context.Context // cancelled by Close: ends a dial in progress
	cancel    context.CancelFunc
	closeOnce sync.Once
	g         group

	mu struct {
		sync.Mutex
		conn    net.Conn // the current connection, nil when none
		lastErr error
	}
}

// NewSlave starts replicating from opts.MasterAddr.
func NewSlave(opts SlaveOptions) (*Slave, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Slave{opts: opts, stop: make(chan struct{}), stopped: make(chan struct{}),
		log: opts.Logger.With().Str("component", "ha-slave").Str("master", opts.MasterAddr).Logger()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.g.goTracked(s.loop)
	return s, nil
}

// Close stops replicating and waits for the goroutines. It is idempotent.
func (s *Slave) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.cancel()
		s.mu.Lock()
		if s.mu.conn != nil {
			_ = s.mu.conn.Close()
		}
		s.mu.Unlock()
	})
	s.g.wait()
	return nil
}

// Stopped is closed when the slave has stopped replicating: after Close, or for good
// after ErrDiverged (LastError tells which).
func (s *Slave) Stopped() <-chan struct{} { return s.stopped }

// Connected reports whether the slave holds a connection to its master.
func (s *Slave) Connected() bool { return s.connected.Load() }

// Offset is the slave's replica end.
func (s *Slave) Offset() int64 { return s.opts.Log.ReplicaOffset() }

// Frames is the number of frames received (heartbeats included).
func (s *Slave) Frames() int64 { return s.frames.Load() }

// LastError is why the last connection ended (nil before any ended).
func (s *Slave) LastError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.lastErr
}

// loop connects, replicates until the connection fails, and retries with backoff
// (nextRetry): soon after a connection that worked, so that a master restarted after a
// crash is found within tens of milliseconds of serving, then less and less often up to
// RetryMax while the master stays away. A run of failed attempts logs one line a second.
func (s *Slave) loop() {
	defer close(s.stopped)
	delay := time.Duration(0)
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		progressed, err := s.session()
		select {
		case <-s.stop:
			return
		default:
		}
		s.mu.Lock()
		s.mu.lastErr = err
		s.mu.Unlock()
		if errors.Is(err, ErrDiverged) || errors.Is(err, ErrBehindMaster) {
			s.log.Error().Err(err).Int64("offset", s.Offset()).
				Msg("replication stopped: move this slave's data directory aside and restart it to resync from the master")
			return
		}
		fresh := progressed || errors.Is(err, ErrResync)
		delay = nextRetry(delay, fresh, s.opts.RetryFloor, s.opts.RetryMax)
		wait := jitter(delay, rand.Int64N)
		s.logEnded(err, fresh || delay == s.opts.RetryFloor, wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.stop:
			t.Stop()
			return
		}
	}
}

// logEnded logs why a connection ended: always the first failure after a working
// connection (first), later ones of the same run at most once a second, with how many
// were held back.
func (s *Slave) logEnded(err error, first bool, wait time.Duration) {
	var suppressed int64
	if !first {
		ok, n := s.failLog.Allow()
		if !ok {
			return
		}
		suppressed = n
	}
	ev := s.log.Warn()
	if errors.Is(err, commitlog.ErrReplicaData) || errors.Is(err, errMasterBehind) {
		ev = s.log.Error()
	}
	if suppressed > 0 {
		ev = ev.Int64("suppressed", suppressed)
	}
	ev.Err(err).Int64("offset", s.Offset()).Dur("retry_in", wait).Msg("replication connection ended")
}

// nextRetry is the reconnect delay after one of prev: floor after a connection that
// moved data (fresh) or for the first attempt, else half as long again as prev, at most
// ceiling. From the 25 ms default the attempts come about 25, 60, 120, 200, 330 ms and
// 0.5, 0.8, 1.2 s after the loss, then every 5 s at most.
func nextRetry(prev time.Duration, fresh bool, floor, ceiling time.Duration) time.Duration {
	if fresh || prev < floor {
		return floor
	}
	return min(prev+prev/2, ceiling)
}

// jitter returns a wait drawn from [d·3/4, d] with rnd (rand.Int64N), so that the slaves
// of one restarted master do not dial it in step.
func jitter(d time.Duration, rnd func(int64) int64) time.Duration {
	spread := int64(d / 4)
	if spread <= 0 {
		return d
	}
	return d - time.Duration(rnd(spread+1))
}

var errMasterBehind = errors.New("ha: the master closed the connection at once: it refused this slave " +
	"(credentials or TLS: see its log) or its log is behind the slave's (will retry)")

// secure runs TLS (SlaveOptions.TLS) on raw and sends the hello (SlaveOptions.Credentials;
// an identity hello in controller mode) within ctx, and returns the connection to
// replicate on.
func (s *Slave) secure(ctx context.Context, raw net.Conn) (net.Conn, error) {
	conn := raw
	if s.opts.TLS != nil {
		cfg := s.opts.TLS
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(s.opts.MasterAddr)
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("ha: TLS handshake with master: %w", err)
		}
		conn = tc
	}
	if s.opts.Credentials.AccessKey == "" && s.opts.Epoch == 0 {
		return conn, nil
	}
	hello, err := s.hello()
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		if err := conn.SetWriteDeadline(dl); err != nil {
			return nil, fmt.Errorf("ha: set write deadline: %w", err)
		}
	}
	if _, err := conn.Write(hello); err != nil {
		return nil, fmt.Errorf("ha: send hello: %w", err)
	}
	return conn, nil
}

// session runs one connection. progressed reports whether any body was appended.
func (s *Slave) session() (progressed bool, err error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.opts.DialTimeout)
	defer cancel()
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", s.opts.MasterAddr)
	if err != nil {
		return false, fmt.Errorf("ha: connect to master: %w", err)
	}
	s.mu.Lock()
	select {
	case <-s.stop:
		s.mu.Unlock()
		_ = raw.Close()
		return false, ErrClosed
	default:
	}
	s.mu.conn = raw
	s.mu.Unlock()
	defer func() {
		s.connected.Store(false)
		s.mu.Lock()
		s.mu.conn = nil
		s.mu.Unlock()
		_ = raw.Close()
	}()
	conn, err := s.secure(ctx, raw)
	if err != nil {
		return false, err
	}
	s.connected.Store(true)

	start := s.opts.Log.ReplicaOffset()
	s.log.Info().Int64("offset", start).Msg("connected to master")
	kick := make(chan struct{}, 1)
	kick <- struct{}{} // the first report, right away
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { s.reportLoop(conn, kick, done) })
	defer func() {
		close(done)
		_ = conn.Close()
		wg.Wait()
	}()

	var (
		r   = bufio.NewReaderSize(conn, 256<<10)
		hdr [FrameHeaderSize]byte
		buf []byte
	)
	for framesSeen := 0; ; framesSeen++ {
		if err := conn.SetReadDeadline(time.Now().Add(s.opts.IdleTimeout)); err != nil {
			return progressed, fmt.Errorf("ha: set read deadline: %w", err)
		}
		var h FrameHeader
		h, buf, err = ReadFrame(r, hdr[:], buf, s.opts.MaxFrame)
		if err != nil {
			if framesSeen == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
				// The master drops a slave it refuses, or one that is ahead of it, right
				// after its hello or report (a reset when the master left bytes unread).
				return progressed, fmt.Errorf("%w: closed at once after our offset %d: %w", errMasterBehind, start, err)
			}
			return progressed, fmt.Errorf("ha: read frame: %w", err)
		}
		s.frames.Add(1)
		end := s.opts.Log.ReplicaOffset()
		if h.Offset != end {
			switch {
			case framesSeen > 0:
				return progressed, fmt.Errorf("%w: frame at %d, the slave ends at %d", ErrResync, h.Offset, end)
			case h.Offset < end:
				return progressed, fmt.Errorf("%w: the master ends at %d, this slave at %d", ErrDiverged, h.Offset, end)
			case end != 0:
				return progressed, fmt.Errorf("%w: the master's log starts at %d, this slave ends at %d", ErrBehindMaster, h.Offset, end)
			}
			// An empty slave of a master whose log starts later starts where it does.
			if err := s.opts.Log.StartReplicaAt(h.Offset); err != nil {
				return progressed, fmt.Errorf("ha: start the replica at %d: %w", h.Offset, err)
			}
		}
		if h.Size == 0 {
			continue // heartbeat
		}
		if err := s.opts.Log.AppendReplica(h.Offset, buf); err != nil {
			return progressed, fmt.Errorf("ha: append %d bytes at %d: %w", len(buf), h.Offset, err)
		}
		progressed = true
		select {
		case kick <- struct{}{}:
		default:
		}
	}
}

// reportLoop reports the replica end when kicked (after appends) and every
// ReportInterval, until done.
func (s *Slave) reportLoop(conn net.Conn, kick <-chan struct{}, done <-chan struct{}) {
	var (
		b    [ReportSize]byte
		last = int64(-1)
		tick = time.NewTicker(s.opts.ReportInterval)
	)
	defer tick.Stop()
	for {
		force := false
		select {
		case <-done:
			return
		case <-kick:
		case <-tick.C:
			force = true
		}
		off := s.opts.Log.ReplicaOffset()
		if off == last && !force {
			continue
		}
		PutReport(b[:], off)
		if err := conn.SetWriteDeadline(time.Now().Add(s.opts.IdleTimeout)); err == nil {
			if _, err = conn.Write(b[:]); err != nil {
				_ = conn.Close() // the frame reader sees it and ends the session
				return
			}
		}
		last = off
	}
}
