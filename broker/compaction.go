package broker

import (
	"github.com/ferrymq/ferry/broker/topicconf"
	"github.com/ferrymq/ferry/store"
)

// Compacted topics: the topic attributes cleanupPolicy=compact, compactionKey and
// deleteRetention (topicconf.Compaction) are handed to the store, whose cleaner marks
// the superseded messages and expired tombstones of those topics, and copies their live
// records forward before it deletes a commit-log segment (on a master only:
// store.Options.CompactionCopy), and whose pull path skips the marked ones and reads the
// copied ones from their copies (store/compaction.go, store/compaction_copy.go). Pulls of marked offsets need nothing from the
// broker: the store answers NO_MATCHED_MESSAGE-like results with the next offset to
// pull from, exactly as for messages a filter refuses.

// compactionOf is the store's Options.Compaction: the settings of topic's config.
// b.topics is set before the store starts its cleaner, which is the only caller.
func (b *Broker) compactionOf(topic string) (store.CompactionPolicy, bool) {
	if b.topics == nil {
		return store.CompactionPolicy{}, false
	}
	cfg, ok := b.topics.Get(topic)
	if !ok {
		return store.CompactionPolicy{}, false
	}
	key, del, ok := topicconf.Compaction(&cfg)
	return store.CompactionPolicy{KeyProperty: key, DeleteRetention: del}, ok
}
