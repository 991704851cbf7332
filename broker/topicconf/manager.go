package topicconf

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ferrymq/ferry/broker/internal/metafile"
	"github.com/ferrymq/ferry/protocol"
)

// table is one immutable version of the topic table. It is never modified
// after it has been published through Manager.cur.
type table struct {
	topics  map[string]protocol.TopicConfig
	version protocol.DataVersion
}

// Manager is a broker's topic configuration table. It is safe for concurrent
// use; reads are lock-free.
type Manager struct {
	opts    Options
	file    *metafile.File
	builtin map[string]bool // names created at start; immutable after Open

	cur atomic.Pointer[table]

	// mu serialises changes and the file writes that make them durable.
	mu sync.Mutex
}

// Open validates opts, loads Dir/config/topics.json (or its .bak copy) if it
// exists, and adds the built-in topics the file lacks (see the package doc).
// Nothing is written until the first change.
func Open(opts Options) (*Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{opts: opts}
	file, t, found, err := metafile.Open(opts.FS, filepath.Join(opts.Dir, configDir), fileName, &m.opts.Logger,
		func(b []byte) (*table, error) { return decodeTable(b, &m.opts.Logger) })
	if err != nil {
		return nil, fmt.Errorf("topicconf: %w", err)
	}
	m.file = file
	if !found {
		t = &table{
			topics:  map[string]protocol.TopicConfig{},
			version: protocol.DataVersion{Timestamp: opts.Now().UnixMilli()},
		}
	}
	m.builtin = make(map[string]bool)
	for _, cfg := range builtinTopics(&opts) {
		m.builtin[cfg.TopicName] = true
		if _, ok := t.topics[cfg.TopicName]; !ok {
			t.topics[cfg.TopicName] = cfg
		}
	}
	if !opts.AutoCreateTopicEnable {
		delete(t.topics, protocol.AutoCreateTopicKey)
	}
	m.cur.Store(t)
	return m, nil
}

// builtinTopics lists the topics created at start (see the package doc).
func builtinTopics(o *Options) []protocol.TopicConfig {
	rw := protocol.PermRead | protocol.PermWrite
	mk := func(name string, queues int, perm int32) protocol.TopicConfig {
		return protocol.TopicConfig{TopicName: name, ReadQueueNums: int32(queues),
			WriteQueueNums: int32(queues), Perm: perm, TopicFilterType: protocol.SingleTag}
	}
	out := []protocol.TopicConfig{
		mk(protocol.SelfTestTopic, 1, rw),
		mk(protocol.OffsetMovedEventTopic, 1, rw),
		mk(protocol.ScheduleTopic, o.ScheduleTopicQueueNums, rw),
		mk(protocol.TransHalfTopic, 1, rw),
		mk(protocol.TransOpHalfTopic, 1, rw),
		mk(protocol.TransCheckMaxTimeTopic, 1, rw),
	}
	if o.AutoCreateTopicEnable {
		out = append(out, mk(protocol.AutoCreateTopicKey, o.DefaultTopicQueueNums, rw|protocol.PermInherit))
	}
	named := func(name string, queues int, perm int32) {
		if err := protocol.ValidateTopic(name); err != nil {
			o.Logger.Warn().Err(err).Msg("topicconf: not creating a topic for this name")
			return
		}
		out = append(out, mk(name, queues, perm))
	}
	if o.TraceTopicEnable {
		switch o.TraceTopicName {
		case "", protocol.TraceTopic:
			out = append(out, mk(protocol.TraceTopic, 1, rw))
		default:
			named(o.TraceTopicName, 1, rw)
		}
	}
	if o.ClusterName != "" {
		named(o.ClusterName, 16, rw|protocol.PermInherit)
		named(o.ClusterName+"_REPLY_TOPIC", 1, rw)
	}
	if o.BrokerName != "" {
		named(o.BrokerName, 1, rw|protocol.PermInherit)
	}
	return out
}

// Get returns the config of topic.
func (m *Manager) Get(topic string) (protocol.TopicConfig, bool) {
	cfg, ok := m.cur.Load().topics[topic]
	if !ok {
		return protocol.TopicConfig{}, false
	}
	return cloneConfig(cfg), true
}

// All returns a copy of the whole table with its data version, as sent to
// the name servers in REGISTER_BROKER.
func (m *Manager) All() protocol.TopicConfigSerializeWrapper {
	t := m.cur.Load()
	out := make(map[string]protocol.TopicConfig, len(t.topics))
	for name, cfg := range t.topics {
		out[name] = cloneConfig(cfg)
	}
	return protocol.TopicConfigSerializeWrapper{TopicConfigTable: out, DataVersion: t.version}
}

// DataVersion returns the version of the current table.
func (m *Manager) DataVersion() protocol.DataVersion {
	return m.cur.Load().version
}

// Len returns the number of topics.
func (m *Manager) Len() int { return len(m.cur.Load().topics) }

// IsBuiltin reports whether topic is a system topic or one created at start;
// such topics cannot be changed or deleted through this API.
func (m *Manager) IsBuiltin(topic string) bool {
	return m.builtin[topic] || protocol.IsSystemTopic(topic)
}

// CreateOrUpdate creates topic cfg.TopicName or replaces its config, and
// writes the table. An empty filter type means SINGLE_TAG and empty
// attributes are treated as none. It reports changed=false, without writing,
// when the stored config is already equal. Errors wrap ErrInvalidConfig (bad
// name, queue counts outside 0..MaxQueueNums or both zero, unknown permission
// bits or filter type), ErrSystemTopic, or the file write error (the table is
// then unchanged).
func (m *Manager) CreateOrUpdate(cfg protocol.TopicConfig) (changed bool, err error) {
	cfg = cloneConfig(cfg)
	normalize(&cfg)
	if err := validate(&cfg); err != nil {
		return false, err
	}
	if m.IsBuiltin(cfg.TopicName) {
		return false, fmt.Errorf("%w: %q cannot be changed", ErrSystemTopic, cfg.TopicName)
	}
	return m.change(func(topics map[string]protocol.TopicConfig) (bool, error) {
		if old, ok := topics[cfg.TopicName]; ok && equal(&old, &cfg) {
			return false, nil
		}
		topics[cfg.TopicName] = cfg
		return true, nil
	})
}

// AutoCreate returns the config of topic, creating it first from
// templateTopic if it does not exist, as the send path does (remoting spec
// §6.1 step 2): the template must exist and carry the inherit permission;
// the new topic gets min(requestedQueues, template write queues) read and
// write queues (the template's count when requestedQueues ≤ 0), the
// template's permission without inherit, and its filter type. created
// reports whether this call created the topic. Errors wrap ErrInvalidConfig
// (bad topic name), ErrTemplateNotFound, ErrTemplateNotInheritable or the
// file write error.
func (m *Manager) AutoCreate(topic, templateTopic string, requestedQueues int) (cfg protocol.TopicConfig, created bool, err error) {
	if c, ok := m.Get(topic); ok {
		return c, false, nil
	}
	if err := protocol.ValidateTopic(topic); err != nil {
		return protocol.TopicConfig{}, false, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	topic = strings.Clone(topic) // the table keeps its own copy: the caller's may be a request's bytes
	created, err = m.change(func(topics map[string]protocol.TopicConfig) (bool, error) {
		if c, ok := topics[topic]; ok {
			cfg = c
			return false, nil
		}
		tmpl, ok := topics[templateTopic]
		if !ok {
			return false, fmt.Errorf("%w: %q (creating %q)", ErrTemplateNotFound, templateTopic, topic)
		}
		if !protocol.PermInheritable(tmpl.Perm) {
			return false, fmt.Errorf("%w: %q has perm %d (creating %q)",
				ErrTemplateNotInheritable, templateTopic, tmpl.Perm, topic)
		}
		queues := int(tmpl.WriteQueueNums)
		if requestedQueues > 0 && requestedQueues < queues {
			queues = requestedQueues
		}
		queues = max(1, min(queues, MaxQueueNums))
		cfg = protocol.TopicConfig{
			TopicName:       topic,
			ReadQueueNums:   int32(queues),
			WriteQueueNums:  int32(queues),
			Perm:            tmpl.Perm &^ protocol.PermInherit,
			TopicFilterType: tmpl.TopicFilterType,
		}
		topics[topic] = cfg
		return true, nil
	})
	if err != nil {
		return protocol.TopicConfig{}, false, err
	}
	return cloneConfig(cfg), created, nil
}

// CreateRetryTopic returns the retry topic "%RETRY%<group>", creating it with
// queues read and write queues and perm RW if it does not exist (an existing
// one is returned unchanged). Errors wrap ErrInvalidConfig (bad group name,
// queues outside 1..MaxQueueNums) or the file write error.
func (m *Manager) CreateRetryTopic(group string, queues int) (protocol.TopicConfig, bool, error) {
	return m.createGroupTopic(group, protocol.RetryTopic(group), queues)
}

// CreateDLQTopic returns the dead-letter topic "%DLQ%<group>", creating it
// with one queue and perm RW (as RocketMQ 4.9 and 5.x do) if it does not
// exist. Errors as for CreateRetryTopic.
func (m *Manager) CreateDLQTopic(group string) (protocol.TopicConfig, bool, error) {
	return m.createGroupTopic(group, protocol.DLQTopic(group), 1)
}

func (m *Manager) createGroupTopic(group, topic string, queues int) (cfg protocol.TopicConfig, created bool, err error) {
	if c, ok := m.Get(topic); ok {
		return c, false, nil
	}
	if err := protocol.ValidateGroup(group); err != nil {
		return protocol.TopicConfig{}, false, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	topic = strings.Clone(topic) // the table keeps its own copy
	cfg = protocol.TopicConfig{
		TopicName:       topic,
		ReadQueueNums:   int32(queues),
		WriteQueueNums:  int32(queues),
		Perm:            protocol.PermRead | protocol.PermWrite,
		TopicFilterType: protocol.SingleTag,
	}
	if queues < 1 || queues > MaxQueueNums {
		return protocol.TopicConfig{}, false, fmt.Errorf("%w: %q: queue count %d outside 1..%d",
			ErrInvalidConfig, topic, queues, MaxQueueNums)
	}
	if err := validate(&cfg); err != nil {
		return protocol.TopicConfig{}, false, err
	}
	created, err = m.change(func(topics map[string]protocol.TopicConfig) (bool, error) {
		if c, ok := topics[topic]; ok {
			cfg = c
			return false, nil
		}
		topics[topic] = cfg
		return true, nil
	})
	if err != nil {
		return protocol.TopicConfig{}, false, err
	}
	return cloneConfig(cfg), created, nil
}

// Delete removes topic and writes the table. It reports false, without
// writing, if the topic does not exist. Errors wrap ErrSystemTopic or the
// file write error (the table is then unchanged).
func (m *Manager) Delete(topic string) (bool, error) {
	if m.IsBuiltin(topic) {
		return false, fmt.Errorf("%w: %q cannot be deleted", ErrSystemTopic, topic)
	}
	return m.change(func(topics map[string]protocol.TopicConfig) (bool, error) {
		if _, ok := topics[topic]; !ok {
			return false, nil
		}
		delete(topics, topic)
		return true, nil
	})
}

// change applies fn to a copy of the table; if fn reports a change, the new
// table gets the next data version, is written durably and then published,
// and OnChange is called. An error from fn or from the write leaves the
// table unchanged.
func (m *Manager) change(fn func(topics map[string]protocol.TopicConfig) (bool, error)) (bool, error) {
	m.mu.Lock()
	old := m.cur.Load()
	topics := maps.Clone(old.topics)
	changed, err := fn(topics)
	if err != nil || !changed {
		m.mu.Unlock()
		return false, err
	}
	next := &table{topics: topics, version: old.version}
	next.version.Counter++
	next.version.Timestamp = m.opts.Now().UnixMilli()
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

// writeLocked writes t durably, keeping the previous file as .bak. A failed
// backup write is logged; only a failed main write is an error.
func (m *Manager) writeLocked(t *table) error {
	data, err := encodeTable(t)
	if err != nil {
		return err
	}
	err, bakErr := m.file.Write(data)
	if bakErr != nil {
		m.opts.Logger.Warn().Err(bakErr).Msg("topicconf: backup copy not written")
	}
	if err != nil {
		return fmt.Errorf("topicconf: %w", err)
	}
	return nil
}

// normalize fills defaults RocketMQ leaves implicit.
func normalize(cfg *protocol.TopicConfig) {
	if cfg.TopicFilterType == "" {
		cfg.TopicFilterType = protocol.SingleTag
	}
	if len(cfg.Attributes) == 0 {
		cfg.Attributes = nil
	}
}

// validate checks a normalized config; the error wraps ErrInvalidConfig.
func validate(cfg *protocol.TopicConfig) error {
	if err := protocol.ValidateTopic(cfg.TopicName); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	r, w := cfg.ReadQueueNums, cfg.WriteQueueNums
	if r < 0 || w < 0 || r > MaxQueueNums || w > MaxQueueNums || r+w == 0 {
		return fmt.Errorf("%w: %q: queue counts read %d write %d: each must be in 0..%d and not both 0",
			ErrInvalidConfig, cfg.TopicName, r, w, MaxQueueNums)
	}
	const allPerms = protocol.PermRead | protocol.PermWrite | protocol.PermInherit | protocol.PermPriority
	if cfg.Perm&^allPerms != 0 {
		return fmt.Errorf("%w: %q: perm %d has unknown bits", ErrInvalidConfig, cfg.TopicName, cfg.Perm)
	}
	if cfg.TopicFilterType != protocol.SingleTag && cfg.TopicFilterType != protocol.MultiTag {
		return fmt.Errorf("%w: %q: unknown topic filter type %q", ErrInvalidConfig, cfg.TopicName, cfg.TopicFilterType)
	}
	return nil
}

// equal compares two normalized configs.
func equal(a, b *protocol.TopicConfig) bool {
	return a.TopicName == b.TopicName && a.ReadQueueNums == b.ReadQueueNums &&
		a.WriteQueueNums == b.WriteQueueNums && a.Perm == b.Perm &&
		a.TopicFilterType == b.TopicFilterType && a.TopicSysFlag == b.TopicSysFlag &&
		a.Order == b.Order && maps.Equal(a.Attributes, b.Attributes)
}
