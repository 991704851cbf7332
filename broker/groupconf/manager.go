package groupconf

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ferrymq/ferry/broker/internal/metafile"
	"github.com/ferrymq/ferry/protocol"
)

// snapshot is one immutable version of the table; never modified after it
// has been published through Manager.cur.
type snapshot struct {
	groups  map[string]Config
	version protocol.DataVersion
}

// Manager is a broker's subscription group table. It is safe for concurrent
// use; reads are lock-free.
type Manager struct {
	opts Options
	file *metafile.File

	cur atomic.Pointer[snapshot]

	// mu serialises changes and the file writes that make them durable.
	mu sync.Mutex
}

// Open validates opts and loads Dir/config/subscriptionGroup.json (or its
// .bak copy) if it exists. Nothing is written until the first change.
func Open(opts Options) (*Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{opts: opts}
	file, t, found, err := metafile.Open(opts.FS, filepath.Join(opts.Dir, configDir), fileName, &m.opts.Logger,
		func(b []byte) (*Table, error) { return decodeTable(b, &m.opts.Logger) })
	if err != nil {
		return nil, fmt.Errorf("groupconf: %w", err)
	}
	m.file = file
	s := &snapshot{groups: map[string]Config{}, version: protocol.DataVersion{Timestamp: opts.Now().UnixMilli()}}
	if found {
		s = &snapshot{groups: t.SubscriptionGroupTable, version: t.DataVersion}
	}
	m.cur.Store(s)
	return m, nil
}

// Get returns the config of group.
func (m *Manager) Get(group string) (Config, bool) {
	cfg, ok := m.cur.Load().groups[group]
	return cfg, ok
}

// FindOrCreate returns the config of group, creating it with DefaultConfig
// (retryMaxTimes from Options.RetryMaxTimes) first when it is missing and Options.AutoCreateSubscriptionGroup is set
// (as the broker does on HEART_BEAT and CONSUMER_SEND_MSG_BACK). created
// reports whether this call created it. Errors wrap ErrNotFound (missing,
// auto-creation off), ErrInvalidConfig (bad group name) or the file write
// error.
func (m *Manager) FindOrCreate(group string) (cfg Config, created bool, err error) {
	if c, ok := m.Get(group); ok {
		return c, false, nil
	}
	if !m.opts.AutoCreateSubscriptionGroup {
		return Config{}, false, fmt.Errorf("%w: %q", ErrNotFound, group)
	}
	group = strings.Clone(group) // the table keeps its own copy: the caller's may be a request's bytes
	cfg = DefaultConfig(group)
	cfg.RetryMaxTimes = m.opts.RetryMaxTimes
	if err := cfg.Validate(); err != nil {
		return Config{}, false, err
	}
	created, err = m.change(func(groups map[string]Config) bool {
		if c, ok := groups[group]; ok {
			cfg = c
			return false
		}
		groups[group] = cfg
		return true
	})
	if err != nil {
		return Config{}, false, err
	}
	return cfg, created, nil
}

// Update creates group cfg.GroupName or replaces its config (admin
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) and writes the table. It reports
// changed=false, without writing, when the stored config is already equal.
// Errors wrap ErrInvalidConfig or the file write error (the table is then
// unchanged).
func (m *Manager) Update(cfg Config) (changed bool, err error) {
	if err := cfg.Validate(); err != nil {
		return false, err
	}
	return m.change(func(groups map[string]Config) bool {
		if old, ok := groups[cfg.GroupName]; ok && old == cfg {
			return false
		}
		groups[cfg.GroupName] = cfg
		return true
	})
}

// Delete removes group and writes the table. It reports false, without
// writing, if the group does not exist. On a write error the table is
// unchanged.
func (m *Manager) Delete(group string) (bool, error) {
	return m.change(func(groups map[string]Config) bool {
		if _, ok := groups[group]; !ok {
			return false
		}
		delete(groups, group)
		return true
	})
}

// All returns a copy of the whole table with its data version, for
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (encode it with json.Marshal).
func (m *Manager) All() Table {
	s := m.cur.Load()
	return Table{SubscriptionGroupTable: maps.Clone(s.groups), DataVersion: s.version}
}

// DataVersion returns the version of the current table.
func (m *Manager) DataVersion() protocol.DataVersion {
	return m.cur.Load().version
}

// Len returns the number of groups.
func (m *Manager) Len() int { return len(m.cur.Load().groups) }

// change applies fn to a copy of the table; if fn reports a change, the new
// table gets the next data version, is written durably and then published.
// A write error leaves the table unchanged.
func (m *Manager) change(fn func(groups map[string]Config) bool) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.cur.Load()
	groups := maps.Clone(old.groups)
	if !fn(groups) {
		return false, nil
	}
	next := &snapshot{groups: groups, version: nextVersion(old.version, m.opts.Now().UnixMilli())}
	data, err := encodeTable(&Table{SubscriptionGroupTable: next.groups, DataVersion: next.version})
	if err != nil {
		return false, err
	}
	err, bakErr := m.file.Write(data)
	if bakErr != nil {
		m.opts.Logger.Warn().Err(bakErr).Msg("groupconf: backup copy not written")
	}
	if err != nil {
		return false, fmt.Errorf("groupconf: %w", err)
	}
	m.cur.Store(next)
	return true, nil
}

// nextVersion increments the counter, wrapping from MaxInt32 to 1 so that
// it always fits the Go admin client's int32, and stamps it with nowMs.
func nextVersion(v protocol.DataVersion, nowMs int64) protocol.DataVersion {
	if v.Counter < 0 || v.Counter >= math.MaxInt32 {
		v.Counter = 0
	}
	v.Counter++
	v.Timestamp = nowMs
	return v
}
