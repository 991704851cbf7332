package topicconf

import (
	"maps"

	"github.com/ferrymq/ferry/protocol"
)

// ReplaceAll makes the table a copy of w, a master's table (a slave's metadata sync,
// RocketMQ's SlaveSynchronize.syncTopicConfig): the table becomes w's topics — valid
// entries only, each normalized as on load, plus this broker's built-in topics that w
// lacks — with w's data version, written durably before it is published, and OnChange
// is called. It reports changed=false, without writing, when both the version and the
// topics are already equal (RocketMQ compares versions only; a local change on the slave
// can produce the master's version with other contents). A write error leaves the table
// unchanged.
func (m *Manager) ReplaceAll(w protocol.TopicConfigSerializeWrapper) (changed bool, err error) {
	m.mu.Lock()
	old := m.cur.Load()
	next := &table{topics: make(map[string]protocol.TopicConfig, len(w.TopicConfigTable)), version: w.DataVersion}
	for name, cfg := range w.TopicConfigTable {
		cfg = cloneConfig(cfg)
		cfg.TopicName = name
		normalize(&cfg)
		if err := validate(&cfg); err != nil {
			m.opts.Logger.Warn().Err(err).Str("topic", name).Msg("topicconf: skipping the master's invalid topic")
			continue
		}
		next.topics[name] = cfg
	}
	for name := range m.builtin {
		if _, ok := next.topics[name]; !ok {
			if cfg, ok := old.topics[name]; ok {
				next.topics[name] = cfg
			}
		}
	}
	if old.version == next.version && maps.EqualFunc(old.topics, next.topics, func(a, b protocol.TopicConfig) bool { return equal(&a, &b) }) {
		m.mu.Unlock()
		return false, nil
	}
	if err := m.writeLocked(next); err != nil {
		m.mu.Unlock()
		return false, err
	}
	m.cur.Store(next)
	m.mu.Unlock()
	if m.opts.OnChange != nil {
		m.opts.OnChange()
	}
	return true, nil
}
