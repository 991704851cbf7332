// Package topicconf keeps a broker's topic configuration table: which topics
// exist, their read and write queue counts, permissions and filter type. The
// table is what the broker registers with the name servers and what the send
// and pull paths consult for every request.
//
// # Reads and changes
//
// Reads ([Manager.Get], [Manager.All]) take no lock: the table is an immutable
// snapshot behind an atomic pointer. Every change copies the table, writes the
// new file durably and only then publishes the new snapshot, so a topic that
// a reader can see is already on disk, and a failed write leaves the table as
// it was. Changes are rare (admin requests, auto-creation, retry topics), so
// they are serialised by one mutex and written synchronously.
//
// Every change increments the table's data version counter and stamps it with
// the current time; the name server rebuilds a broker's routes only when that
// version changes. [Options.OnChange] is called after every change.
//
// # File format (config/topics.json)
//
// The file has RocketMQ's shape, so a RocketMQ 4.x/5.x broker directory can be
// opened and a RocketMQ broker can read ours (fastjson ignores the fields it
// does not know, such as stateVersion and attributes in 4.x):
//
//	{
//		"dataVersion": {"stateVersion": 0, "timestamp": 1700000000000, "counter": 12},
//		"topicConfigTable": {
//			"TopicA": {
//				"topicName": "TopicA",      // the map key wins if they differ
//				"readQueueNums": 8,
//				"writeQueueNums": 8,
//				"perm": 6,                   // 0x4 read, 0x2 write, 0x1 inherit, 0x8 priority
//				"topicFilterType": "SINGLE_TAG",
//				"topicSysFlag": 0,
//				"order": false,
//				"attributes": {}             // RocketMQ 5.x
//			}
//		}
//	}
//
// These names and their meaning are part of the format. The file is written
// with tab indentation, like RocketMQ's pretty format. Before a new version
// is written, the previous one is kept as topics.json.bak (RocketMQ does the
// same); each of the two files is replaced atomically (temp file, fsync,
// rename, directory fsync).
//
// Loading tolerates RocketMQ-written files: unknown fields are ignored, a
// missing filter type means SINGLE_TAG, and an entry that cannot be decoded
// or breaks the rules of [Manager.CreateOrUpdate] (bad name, queue counts
// outside 0..1024, unknown permission bits) is skipped with a warning. A main
// file that is missing, empty or not a JSON object falls back to the .bak
// copy; if both are unusable, Open fails rather than start with an empty
// table. No integer-keyed maps occur in this file, so fastjson's bare integer
// keys (see package offsets) do not arise here.
//
// # Built-in topics
//
// Open adds the topics a RocketMQ broker creates at start when the file lacks
// them (a version in the file wins): TBW102 (the auto-create template, perm
// RW+inherit, only when auto-creation is enabled — otherwise it is removed),
// SCHEDULE_TOPIC_XXXX (one queue per delay level), RMQ_SYS_TRANS_HALF_TOPIC,
// RMQ_SYS_TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC,
// OFFSET_MOVED_EVENT (one queue each), optionally RMQ_SYS_TRACE_TOPIC, and,
// when names are configured, the cluster-name topic, "<cluster>_REPLY_TOPIC"
// and the broker-name topic. Built-in and system topics cannot be changed or
// deleted through [Manager.CreateOrUpdate] and [Manager.Delete]. Adding them
// is not a change: it is written with the next real change.
package topicconf
