// Package groupconf keeps a broker's subscription group table: one [Config]
// per consumer group (may it consume, how many retry queues, how many
// retries before the dead-letter queue, whether members are told when the
// group changes). Groups are created on demand when a consumer heartbeats or
// sends a message back ([Manager.FindOrCreate], RocketMQ
// autoCreateSubscriptionGroup) or by admin requests ([Manager.Update]).
//
// Reads are lock-free (an immutable snapshot behind an atomic pointer);
// changes are serialised, written durably and only then published, so a
// failed write leaves the table unchanged. Every change increments the data
// version counter, which is kept within int32 because the official Go admin
// client decodes it into an int32 (it wraps from 2³¹−1 to 1).
//
// # File format (config/subscriptionGroup.json)
//
// RocketMQ's shape; the same JSON, compact, is the body of
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG ([Table.MarshalJSON]):
//
//	{
//		"subscriptionGroupTable": {
//			"cg": {
//				"groupName": "cg",                      // the map key wins if they differ
//				"consumeEnable": true,
//				"consumeFromMinEnable": true,
//				"consumeBroadcastEnable": true,
//				"retryQueueNums": 1,                    // 0: failed messages are dropped
//				"retryMaxTimes": 16,
//				"brokerId": 0,
//				"whichBrokerWhenConsumeSlowly": 1,
//				"notifyConsumerIdsChangedEnable": true
//			}
//		},
//		"dataVersion": {"stateVersion": 0, "timestamp": 1700000000000, "counter": 3},
//		"forbiddenTable": {}                            // RocketMQ 5.x; always empty here
//	}
//
// These names and their meaning are part of the format. A field missing from
// an entry takes the RocketMQ default above (as when fastjson fills a fresh
// Java object). RocketMQ 5.x fields (consumeMessageOrderly, groupRetryPolicy,
// subscriptionDataSet, attributes, groupSysFlag, consumeTimeoutMinute) and
// the forbidden table are ignored when loading and not written back. Entries
// that cannot be decoded or break the rules of [Manager.Update] are skipped
// with a warning. The file is written tab-indented, like RocketMQ's pretty
// format, after keeping the previous version as subscriptionGroup.json.bak;
// each file is replaced atomically. A missing, empty or undecodable main
// file falls back to the .bak copy; if both are unusable Open fails.
package groupconf
