// Package offsets is the broker's consumer offset store: for each (consumer
// group, topic, queue) the next queue offset the group will consume, as
// committed by UPDATE_CONSUMER_OFFSET, piggy-backed on pulls, and read by
// QUERY_CONSUMER_OFFSET.
//
// Offsets are kept in memory and written to disk by an owned goroutine every
// Options.FlushInterval (RocketMQ flushConsumerOffsetInterval, 5 s) when
// something changed since the last write, by [Store.Flush], and by
// [Store.Close]. Like RocketMQ, a crash loses at most the commits of the
// last interval: consumers then re-consume a few messages (at-least-once).
// Committing the same offset again is not a change, so idle groups (the Go
// client re-commits every owned queue every 5 s) cause no writes.
//
// [Store.CommitFrom] (a client's commit) and [Store.Commit] (an offset the
// broker sets itself) are the hot path: one mutex, one map lookup with a
// struct key, and no allocation when the key already exists. Negative
// offsets mean "no offset" (the Go client commits −1 for queues it never
// consumed) and are ignored, as are negative queue ids.
//
// # Commit order
//
// Every commit replaces the offset, forwards or back, as in RocketMQ, with
// one exception: commits of one connection apply in the order the
// connection sent them. Each key remembers the connection and arrival
// sequence number (remoting.Command.Seq) of the last CommitFrom applied to
// it, and a CommitFrom from that connection with a lower number is ignored:
// the broker's workers may serve two oneway commits of one connection in the
// other order. A commit from another connection applies and is tracked from
// then on; Commit, Merge and deletions forget the tracking, so the next
// commit of any connection applies. The tracking is not written to the file.
//
// # File format (config/consumerOffset.json)
//
// RocketMQ's shape: the key is "<topic>@<group>", the inner map goes from
// queue id to offset.
//
//	{
//		"offsetTable":{
//			"TopicTest@cg":{"0":250,"1":249},
//			"%RETRY%cg@cg":{"0":3}
//		}
//	}
//
// These names and their meaning are part of the format. RocketMQ writes the
// file with fastjson, which prints the integer keys of the inner maps
// unquoted ({0:250,1:249}); that is not JSON, so the loader accepts both
// forms (bare integer object keys are quoted before decoding). We write the
// keys quoted: the file is then valid JSON for every tool (jq, editors, Go's
// encoding/json), and fastjson converts quoted keys to Integer when it
// parses a Map<Integer, Long>, so RocketMQ still reads it. Other top-level
// fields (RocketMQ 5.x dataVersion and the like) are ignored. Entries whose
// key lacks "@" or has an empty part, whose queue id is not an int32 ≥ 0, or
// whose offset is not an integer ≥ 0 are skipped with a warning; topic and
// group names therefore must not contain "@" (the broker validates names).
// Entries are written sorted, so equal tables give equal files.
//
// Each write first keeps the previous contents as consumerOffset.json.bak
// and then replaces the file atomically (temp file, fsync, rename, directory
// fsync). A missing, empty or undecodable file falls back to the .bak copy;
// if both are unusable Open fails rather than silently rewind every group.
package offsets
