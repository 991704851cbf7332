package acl

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
	"github.com/ferrymq/ferry/protocol"
)

func TestWatcherOptionsValidate(t *testing.T) {
	o := DefaultWatcherOptions()
	require.Error(t, o.Validate())
	o.Path = "x"
	require.NoError(t, o.Validate())
	o.Interval = 0
	require.Error(t, o.Validate())
	_, err := NewWatcher(o)
	require.Error(t, err)
}

func TestWatcherInitialLoadErrors(t *testing.T) {
	dir := t.TempDir()
	o := DefaultWatcherOptions()
	o.Path = filepath.Join(dir, "missing.yml")
	_, err := NewWatcher(o)
	require.ErrorIs(t, err, os.ErrNotExist)
	o.Path = filepath.Join(dir, "bad.yml")
	require.NoError(t, os.WriteFile(o.Path, []byte("accounts: [{accessKey: x}]"), 0o600))
	_, err = NewWatcher(o)
	require.ErrorIs(t, err, ErrInvalidConfig)
}

func TestWatcherReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	write := func(s string) { // atomically, so no poll sees a half-written file
		tmp := path + ".tmp"
		require.NoError(t, os.WriteFile(tmp, []byte(s), 0o600))
		require.NoError(t, os.Rename(tmp, path))
	}
	v1 := "accounts:\n  - {accessKey: account1, secretKey: secret-one, defaultTopicPerm: PUB}\n"
	v2 := "accounts:\n  - {accessKey: account1, secretKey: secret-one, defaultTopicPerm: DENY}\n  - {accessKey: account2, secretKey: secret-two, defaultTopicPerm: PUB}\n"
	write(v1)

	var (
		mu       sync.Mutex
		errs     []error
		reloaded int
	)
	logs := &testkit.Buffer{}
	o := DefaultWatcherOptions()
	o.Path = path
	o.Interval = 10 * time.Millisecond
	o.Logger = zerolog.New(logs)
	o.OnError = func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	o.OnReload = func(*ACL) { mu.Lock(); reloaded++; mu.Unlock() }
	w, err := NewWatcher(o)
	require.NoError(t, err)
	defer w.Close()

	send := func(ak, sk string) error {
		return w.Check(signed(ak, sk, int16(protocol.SendMessage), nil, "topic", "T"))
	}
	require.NoError(t, send("account1", "secret-one"))
	require.ErrorIs(t, send("account2", "secret-two"), ErrUnknownAccessKey)

	// A new file applies once it has settled.
	write(v2)
	require.Eventually(t, func() bool { return send("account2", "secret-two") == nil }, 5*time.Second, 5*time.Millisecond)
	require.ErrorIs(t, send("account1", "secret-one"), ErrDenied)
	require.Equal(t, 2, w.ACL().NumAccounts())

	// A broken file keeps the rules, is reported once, and logged.
	before := w.ACL()
	write("accounts:\n  - {accessKey: account1, secretKey: short}\n")
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(errs) == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(100 * time.Millisecond) // more polls: no more reports, no swap
	// Copied out: a failed assertion under mu would leave the watcher's callbacks
	// blocked and hang the test instead of failing it.
	snapshot := func() ([]error, int) { mu.Lock(); defer mu.Unlock(); return slices.Clone(errs), reloaded }
	gotErrs, _ := snapshot()
	require.Len(t, gotErrs, 1)
	require.ErrorIs(t, gotErrs[0], ErrInvalidConfig)
	require.NotContains(t, gotErrs[0].Error(), "short\"")
	require.Same(t, before, w.ACL())
	require.NoError(t, send("account2", "secret-two"))
	require.Contains(t, logs.String(), "accounts file rejected")

	// A removed file keeps the rules too.
	require.NoError(t, os.Remove(path))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(errs) == 2 }, 5*time.Second, 5*time.Millisecond)
	gotErrs, _ = snapshot()
	require.ErrorIs(t, gotErrs[1], os.ErrNotExist)
	require.Same(t, before, w.ACL())

	// Fixed again.
	write(v1)
	require.Eventually(t, func() bool { return send("account2", "secret-two") != nil }, 5*time.Second, 5*time.Millisecond)
	require.NoError(t, send("account1", "secret-one"))
	_, gotReloaded := snapshot()
	require.Equal(t, 2, gotReloaded)
	require.Contains(t, logs.String(), "acl: rules reloaded")

	// Reload applies immediately or reports.
	write(v2)
	require.NoError(t, w.Reload())
	require.NoError(t, send("account2", "secret-two"))
	write("nope: 1\n")
	require.ErrorIs(t, w.Reload(), ErrInvalidConfig)
	require.NoError(t, send("account2", "secret-two"))

	require.NoError(t, w.Close())
	require.NoError(t, w.Close()) // idempotent
}

// TestWatcherSameSizeQuickRewrite: a rewrite with the same size within the timestamp
// granularity is still noticed (content hash, racy window).
func TestWatcherSameSizeQuickRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	a := "accounts:\n  - {accessKey: account1, secretKey: secret-one, defaultTopicPerm: PUB}\n"
	b := "accounts:\n  - {accessKey: account1, secretKey: secret-one, defaultTopicPerm: SUB}\n"
	require.Len(t, b, len(a))
	require.NoError(t, os.WriteFile(path, []byte(a), 0o600))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	o := DefaultWatcherOptions()
	o.Path = path
	o.Interval = 10 * time.Millisecond
	w, err := NewWatcher(o)
	require.NoError(t, err)
	defer w.Close()
	require.NoError(t, os.WriteFile(path, []byte(b), 0o600))
	require.NoError(t, os.Chtimes(path, fi.ModTime(), fi.ModTime())) // same mtime, same size
	require.Eventually(t, func() bool {
		return w.Check(signed("account1", "secret-one", int16(protocol.SendMessage), nil, "topic", "T")) != nil
	}, 5*time.Second, 5*time.Millisecond)
}
