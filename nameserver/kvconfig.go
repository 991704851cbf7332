package nameserver

// The name server's KV configuration: namespaces of string entries that operators
// set with PUT_KV_CONFIG (100) and read with GET_KV_CONFIG (101) and
// GET_KVLIST_BY_NAMESPACE (219), as RocketMQ's KVConfigManager. Two namespaces
// mean something to the name server:
//
//   - ORDER_TOPIC_CONFIG: topic → "brokerA:4;brokerB:4"; a route of the topic carries
//     it as orderTopicConf and a broker's registration answer carries the whole
//     namespace (see route.go and register.go).
//   - FERRY_DRAINED_BROKERS (Ferry's): broker name → the time of its drain
//     (WIPE_WRITE_PERM_OF_BROKER); see drain.go.
//
// File layout (kvConfig.json, RocketMQ's KVConfigSerializeWrapper), compact JSON:
//
//	{"configTable":{"<namespace>":{"<key>":"<value>",…},…}}
//
// Every change rewrites the whole file atomically (temporary file, fsync, rename,
// directory fsync: mmap.WriteFileAtomic) before it is answered. A file that does not
// parse is an error at start: the name server does not start over an empty table and
// then overwrite what an operator stored.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"github.com/ferrymq/ferry/internal/mmap"
)

// Namespaces of the KV configuration the name server reads itself.
const (
	// NamespaceOrderTopicConfig maps a topic to its orderTopicConf
	// ("brokerA:4;brokerB:4"), RocketMQ's NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG.
	NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"
	// NamespaceDrainedBrokers is Ferry's record of drained broker groups: broker name
	// → RFC 3339 time of the drain. It makes a drain outlive a name server restart.
	NamespaceDrainedBrokers = "FERRY_DRAINED_BROKERS"
)

// ErrKVConfig is wrapped by the errors of loading and saving the KV configuration
// file (a file that does not parse, an unwritable directory).
var ErrKVConfig = errors.New("nameserver: kv config")

// kvFile is the JSON shape of kvConfig.json.
type kvFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// kvStore is the KV configuration: an in-memory table, saved to path after every
// change when path is set.
type kvStore struct {
	path string  // "" = memory only
	fsys mmap.FS // where path is written (the real file system; an ErrorFS in tests)

	mu    sync.RWMutex
	table map[string]map[string]string // namespace → key → value
}

// openKVStore loads path (a missing file is an empty table) or, with path "", returns
// an empty in-memory store.
func openKVStore(path string) (*kvStore, error) {
	s := &kvStore{path: path, fsys: mmap.OSFS{}, table: make(map[string]map[string]string)}
	if path == "" {
		return s, nil
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrKVConfig, err)
	}
	var f kvFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %s is corrupt (%w); fix or remove it (it holds PUT_KV_CONFIG entries and drained brokers)",
			ErrKVConfig, path, err)
	}
	for ns, kv := range f.ConfigTable {
		if len(kv) > 0 {
			s.table[ns] = maps.Clone(kv)
		}
	}
	return s, nil
}

// get returns the value of (namespace, key).
func (s *kvStore) get(namespace, key string) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	v, ok := s.table[namespace][key]
	return v, ok
}

// list returns a copy of a namespace (nil when it has no entry).
func (s *kvStore) list(namespace string) map[string]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.table[namespace])
}

// put stores value under (namespace, key) and saves the table. On a failed save the
// table is left as it was — unless the new file is in place and only its rename is not
// known to be durable (mmap.ErrRenameNotDurable): the table then keeps the change, as the
// file does, and the error is still returned.
func (s *kvStore) put(namespace, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv := s.table[namespace]
	old, had := kv[key]
	if kv == nil {
		kv = make(map[string]string)
		s.table[namespace] = kv
	}
	kv[key] = value
	if err := s.saveLocked(); err != nil {
		if errors.Is(err, mmap.ErrRenameNotDurable) {
			return err
		}
		if had {
			kv[key] = old
		} else {
			s.removeLocked(namespace, key)
		}
		return err
	}
	return nil
}

// remove deletes (namespace, key) and saves the table; it reports whether the entry
// existed. Deleting an absent entry saves nothing. A failed save is handled as put's.
func (s *kvStore) remove(namespace, key string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.table[namespace][key]
	if !had {
		return false, nil
	}
	s.removeLocked(namespace, key)
	if err := s.saveLocked(); err != nil {
		if errors.Is(err, mmap.ErrRenameNotDurable) {
			return true, err
		}
		kv := s.table[namespace]
		if kv == nil {
			kv = make(map[string]string)
			s.table[namespace] = kv
		}
		kv[key] = old
		return false, err
	}
	return true, nil
}

// removeLocked deletes an entry and drops its namespace when left empty (an empty
// namespace is answered QUERY_NOT_FOUND, as RocketMQ's never-created one).
func (s *kvStore) removeLocked(namespace, key string) {
	delete(s.table[namespace], key)
	if len(s.table[namespace]) == 0 {
		delete(s.table, namespace)
	}
}

// saveLocked writes the table to the file, atomically.
func (s *kvStore) saveLocked() error {
	if s.path == "" {
		return nil
	}
	data, err := json.Marshal(kvFile{ConfigTable: s.table})
	if err != nil {
		return fmt.Errorf("%w: encode: %w", ErrKVConfig, err)
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return fmt.Errorf("%w: %w", ErrKVConfig, err)
	}
	if err := mmap.WriteFileAtomic(s.fsys, s.path, data); err != nil {
		return fmt.Errorf("%w: %w", ErrKVConfig, err)
	}
	return nil
}
