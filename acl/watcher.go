package acl

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// WatcherOptions configures a Watcher. Start from DefaultWatcherOptions and set Path.
type WatcherOptions struct {
	// Path is the accounts file (plain_acl.yml).
	Path string
	// Interval is how often the file is polled (5 s). A change is applied once two
	// consecutive polls read the same new content, so a file caught half-written is
	// not applied; a change therefore takes effect within about two intervals.
	Interval time.Duration
	// Logger receives reloads (info) and rejected files (error).
	Logger zerolog.Logger
	// OnReload, if set, is called from the polling goroutine after new rules are
	// swapped in.
	OnReload func(*ACL)
	// OnError, if set, is called from the polling goroutine when the changed file
	// cannot be read or is invalid; the previous rules stay in force. It is called once
	// per distinct bad content, not on every poll.
	OnError func(error)
}

// DefaultWatcherOptions returns a 5 s interval and a no-op logger.
func DefaultWatcherOptions() WatcherOptions {
	return WatcherOptions{Interval: 5 * time.Second, Logger: zerolog.Nop()}
}

// Validate checks the options.
func (o *WatcherOptions) Validate() error {
	var errs []error
	if o.Path == "" {
		errs = append(errs, errors.New("acl: watcher options: Path is required"))
	}
	if o.Interval <= 0 {
		errs = append(errs, fmt.Errorf("acl: watcher options: Interval %v is not positive", o.Interval))
	}
	return errors.Join(errs...)
}

// racyWindow: a file modified this recently is re-read even when its modification time
// and size look unchanged, since file systems with coarse timestamps can hide a quick
// same-size rewrite.
const racyWindow = 2 * time.Second

// Watcher holds the ACL loaded from a file and swaps in a new one when the file changes
// (polling modification time and size, then a SHA-256 of the content). A file that
// fails to load leaves the current rules in force. Its polling goroutine is stopped by
// Close.
type Watcher struct {
	opts WatcherOptions
	cur  atomic.Pointer[ACL]

	mu struct { // serializes polls and Reload
		sync.Mutex
		mod                time.Time
		size               int64
		applied            [sha256.Size]byte // content of the rules in force
		pending            [sha256.Size]byte // new content seen once, waiting to be seen again
		failed             [sha256.Size]byte // last content reported bad
		havePend, haveFail bool
	}

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// NewWatcher loads the file (an error if it cannot be loaded) and starts polling it.
func NewWatcher(opts WatcherOptions) (*Watcher, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	w := &Watcher{opts: opts, stop: make(chan struct{})}
	if err := w.Reload(); err != nil {
		return nil, err
	}
	w.wg.Go(w.loop)
	return w, nil
}

// ACL returns the rules in force.
func (w *Watcher) ACL() *ACL { return w.cur.Load() }

// Check is w.ACL().Check(req).
func (w *Watcher) Check(req Request) error { return w.cur.Load().Check(req) }

// Authorize is w.ACL().Authorize(req).
func (w *Watcher) Authorize(req Request) (Caller, error) { return w.cur.Load().Authorize(req) }

// Reload reads the file now and swaps in its rules, or returns the error and keeps the
// current ones. It does not wait for the content to settle.
func (w *Watcher) Reload() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := os.Stat(w.opts.Path)
	if err != nil {
		return fmt.Errorf("acl: accounts file: %w", err)
	}
	data, err := os.ReadFile(w.opts.Path)
	if err != nil {
		return fmt.Errorf("acl: accounts file: %w", err)
	}
	sum := sha256.Sum256(data)
	a, err := Parse(data)
	if err != nil {
		return fmt.Errorf("acl: accounts file %s: %w", w.opts.Path, err)
	}
	w.applyLocked(a, sum, fi)
	return nil
}

// Close stops polling and waits for the goroutine. It is idempotent.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() { close(w.stop) })
	w.wg.Wait()
	return nil
}

func (w *Watcher) loop() {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.poll()
		}
	}
}

// poll runs one check of the file.
func (w *Watcher) poll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	fi, err := os.Stat(w.opts.Path)
	if err != nil {
		w.reportLocked(fmt.Errorf("acl: accounts file: %w", err), [sha256.Size]byte{})
		return
	}
	if fi.ModTime().Equal(w.mu.mod) && fi.Size() == w.mu.size && !w.mu.havePend &&
		time.Since(fi.ModTime()) > racyWindow {
		return
	}
	data, err := os.ReadFile(w.opts.Path)
	if err != nil {
		w.reportLocked(fmt.Errorf("acl: accounts file: %w", err), [sha256.Size]byte{})
		return
	}
	sum := sha256.Sum256(data)
	w.mu.mod, w.mu.size = fi.ModTime(), fi.Size()
	switch {
	case sum == w.mu.applied:
		w.mu.havePend, w.mu.haveFail = false, false
		return
	case !w.mu.havePend || sum != w.mu.pending:
		w.mu.pending, w.mu.havePend = sum, true // wait for it to settle
		return
	}
	w.mu.havePend = false
	if w.mu.haveFail && sum == w.mu.failed {
		return // already reported
	}
	a, err := Parse(data)
	if err != nil {
		w.reportLocked(fmt.Errorf("acl: accounts file %s, keeping the previous rules: %w", w.opts.Path, err), sum)
		return
	}
	w.applyLocked(a, sum, fi)
	w.opts.Logger.Info().Str("path", w.opts.Path).Int("accounts", a.NumAccounts()).Msg("acl: rules reloaded")
	if w.opts.OnReload != nil {
		w.opts.OnReload(a)
	}
}

func (w *Watcher) applyLocked(a *ACL, sum [sha256.Size]byte, fi os.FileInfo) {
	w.cur.Store(a)
	w.mu.applied = sum
	w.mu.mod, w.mu.size = fi.ModTime(), fi.Size()
	w.mu.havePend, w.mu.haveFail = false, false
}

// reportLocked logs and reports err once per bad content (a zero sum: a read error,
// reported once until the file is readable and changes again).
func (w *Watcher) reportLocked(err error, sum [sha256.Size]byte) {
	if w.mu.haveFail && w.mu.failed == sum {
		return
	}
	w.mu.failed, w.mu.haveFail = sum, true
	w.opts.Logger.Error().Err(err).Str("path", w.opts.Path).Msg("acl: accounts file rejected")
	if w.opts.OnError != nil {
		w.opts.OnError(err)
	}
}
