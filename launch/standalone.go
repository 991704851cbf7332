package launch

import (
	"fmt"
	"path/filepath"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
)

// StandaloneSegmentSize is the commit-log segment size `ferry standalone` uses when none
// is configured, 64 MiB (conf/standalone.yaml says the same): a name server and a broker
// in one process are a development or laptop setup, where RocketMQ's 1 GiB segments
// (broker.yaml) mean a gigabyte of disk before the first message.
const StandaloneSegmentSize = 64 * conf.MiB

// commitLogDir is where the store keeps the commit log under broker.dataDir.
const commitLogDir = "commitlog"

// StandaloneDefaults gives the settings of cfg that were not set explicitly (isSet reports
// whether a key was, by file, environment or flag) the defaults of `ferry standalone`
// instead of a production broker's, and returns the keys it changed:
//   - broker.commitLogSegmentSize: StandaloneSegmentSize, or the segment size of the store
//     already in broker.dataDir (read from fsys; the size is fixed once a store exists),
//     so a store made with other defaults still opens. A default that would make cfg
//     invalid (a maxMessageSize too large for small segments) is left alone;
//   - broker.httpListen: StandaloneHTTPListen (/healthz and /readyz on by default).
func StandaloneDefaults(cfg *conf.Config, isSet func(key string) bool, fsys mmap.FS) ([]string, error) {
	var changed []string
	if !isSet(KeyHTTPListen) && cfg.Broker.HTTPListen != StandaloneHTTPListen {
		cfg.Broker.HTTPListen = StandaloneHTTPListen
		changed = append(changed, KeyHTTPListen)
	}
	const key = KeySegmentSize
	if isSet(key) {
		return changed, nil
	}
	size, err := existingSegmentSize(fsys, filepath.Join(cfg.Broker.DataDir, commitLogDir))
	if err != nil {
		return nil, err
	}
	if size == 0 {
		size = StandaloneSegmentSize
	}
	old := cfg.Broker.CommitLogSegmentSize
	if size == old {
		return changed, nil
	}
	cfg.Broker.CommitLogSegmentSize = size
	if cfg.Broker.Validate() != nil {
		cfg.Broker.CommitLogSegmentSize = old
		return changed, nil
	}
	return append(changed, key), nil
}

// The keys StandaloneDefaults may change.
const (
	// KeySegmentSize is broker.commitLogSegmentSize.
	KeySegmentSize = "broker.commitLogSegmentSize"
	// KeyHTTPListen is broker.httpListen.
	KeyHTTPListen = "broker.httpListen"
)

// existingSegmentSize returns the size of the first commit-log segment in dir, 0 when
// there is none (or it is empty: a crash while creating it).
func existingSegmentSize(fsys mmap.FS, dir string) (int64, error) {
	names, err := fsys.ReadDir(dir) // a missing directory is empty
	if err != nil {
		return 0, fmt.Errorf("launch: %w", err)
	}
	for _, name := range names {
		if !isSegmentName(name) {
			continue
		}
		size, err := fsys.Size(filepath.Join(dir, name))
		if err != nil {
			return 0, fmt.Errorf("launch: %w", err)
		}
		return size, nil
	}
	return 0, nil
}

// isSegmentName reports whether name is a commit-log segment's: 20 decimal digits.
func isSegmentName(name string) bool {
	if len(name) != 20 {
		return false
	}
	for i := range len(name) {
		if name[i] < '0' || name[i] > '9' {
			return false
		}
	}
	return true
}
