package groupconf

import (
	"fmt"
	"maps"
)

// ReplaceAll makes the table a copy of t, a master's table (a slave's metadata sync,
// RocketMQ's SlaveSynchronize.syncSubscriptionGroupConfig): the table becomes t's valid
// groups with t's data version, written durably before it is published. It reports changed=false, without writing, when both the version and
// the groups are already equal. A write error leaves the table unchanged.
func (m *Manager) ReplaceAll(t Table) (changed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.cur.Load()
	groups := make(map[string]Config, len(t.SubscriptionGroupTable))
	for name, cfg := range t.SubscriptionGroupTable {
		cfg.GroupName = name
		if err := cfg.Validate(); err != nil {
			m.opts.Logger.Warn().Err(err).Str("group", name).Msg("groupconf: skipping the master's invalid group")
			continue
		}
		groups[name] = cfg
	}
	if old.version == t.DataVersion && maps.Equal(old.groups, groups) {
		return false, nil
	}
	next := &snapshot{groups: groups, version: t.DataVersion}
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
