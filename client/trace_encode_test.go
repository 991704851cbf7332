package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// joinTrace builds one record the way the layouts in trace_encode.go draw it.
func joinTrace(fields ...string) string {
	return strings.Join(fields, "\x01") + "\x02"
}

func TestTraceRecordLayouts(t *testing.T) {
	pub := TraceRecord{Type: TracePub, Timestamp: 1700000000123, RegionID: "DefaultRegion", Group: "pg", Topic: "T",
		MsgID: "C0A8000100002A9F0000000000000001", Tags: "TagA", Keys: "k1 k2", StoreHost: "127.0.0.1:10911",
		BodyLength: 5, CostMs: 3, MsgType: TraceMsgDelay, OffsetMsgID: "7F00000100002A9F0000000000000040",
		Success: true, ClientHost: "10.0.0.7"}
	before := TraceRecord{Type: TraceSubBefore, Timestamp: 1700000000200, RegionID: "DefaultRegion", Group: "cg",
		RequestID: "REQ1", MsgID: pub.MsgID, RetryTimes: 2, ClientHost: "10.0.0.8"}
	after := TraceRecord{Type: TraceSubAfter, RequestID: "REQ1", MsgID: pub.MsgID, CostMs: 9, Success: false,
		Keys: "k1 k2", ContextCode: 4, Timestamp: 1700000000209, Group: "cg"}
	end := TraceRecord{Type: TraceEndTransaction, Timestamp: 1, RegionID: "r", Group: "tg", Topic: "T", MsgID: "M",
		Tags: "t", Keys: "k", StoreHost: "h:1", MsgType: TraceMsgTransHalf, TransactionID: "X",
		TransactionState: "COMMIT_MESSAGE", FromCheck: true}

	var body []byte
	for _, r := range []*TraceRecord{&pub, &before, &after, &end} {
		body = AppendTraceRecord(body, r)
	}
	want := joinTrace("Pub", "1700000000123", "DefaultRegion", "pg", "T", pub.MsgID, "TagA", "k1 k2",
		"127.0.0.1:10911", "5", "3", "3", pub.OffsetMsgID, "true", "10.0.0.7") +
		joinTrace("SubBefore", "1700000000200", "DefaultRegion", "cg", "REQ1", pub.MsgID, "2", "null", "10.0.0.8") +
		joinTrace("SubAfter", "REQ1", pub.MsgID, "9", "false", "k1 k2", "4", "1700000000209", "cg") +
		joinTrace("EndTransaction", "1", "r", "tg", "T", "M", "t", "k", "h:1", "1", "X", "COMMIT_MESSAGE", "true")
	require.Equal(t, want, string(body), "the upstream field order, missing Sub keys written as null")

	got, err := DecodeTraceRecords(body)
	require.NoError(t, err)
	require.Equal(t, []TraceRecord{pub, before, after, end}, got)

	// Separators inside a value are dropped, so they cannot shift the fields.
	odd := TraceRecord{Type: TraceSubAfter, RequestID: "R", MsgID: "M", Keys: "a\x01b\x02c"}
	got, err = DecodeTraceRecords(AppendTraceRecord(nil, &odd))
	require.NoError(t, err)
	require.Equal(t, "abc", got[0].Keys)
	require.Empty(t, AppendTraceRecord(nil, &TraceRecord{Type: "Recall"}), "no layout, nothing written")
}

func TestDecodeOlderAndBadTraceRecords(t *testing.T) {
	body := joinTrace("Pub", "10", "reg", "pg", "T", "M1", "null", "null", "h:1", "4", "2", "0", "true") + // 13 fields
		joinTrace("Pub", "11", "reg", "pg", "T", "M2", "", "", "h:1", "4", "2", "0", "OFF", "TRUE") + // 14 fields
		joinTrace("SubBefore", "12", "reg", "cg", "R", "M1", "0", "k") + // Java: no clientHost
		joinTrace("SubAfter", "R", "M1", "1", "true", "k") + // oldest: no contextCode
		joinTrace("SubAfter", "R", "M1", "1", "true", "k", "0", "13") + // Java 4.x: no group
		joinTrace("Recall", "1", "r", "g", "T", "M1", "true") + // a type without a layout here
		joinTrace("Pub", "x", "reg", "pg", "T", "M3", "", "", "h:1", "4", "2", "0") + // bad time
		joinTrace("SubBefore", "1", "2") + // too short
		"\x02\x02"
	got, err := DecodeTraceRecords([]byte(body))
	require.Error(t, err)
	require.True(t, errors.Is(err, ErrBadTrace), "%v", err)
	require.Contains(t, err.Error(), "time")
	require.Contains(t, err.Error(), "at least 8")
	require.Len(t, got, 5, "the good records still come back")

	require.Equal(t, TraceRecord{Type: TracePub, Timestamp: 10, RegionID: "reg", Group: "pg", Topic: "T", MsgID: "M1",
		StoreHost: "h:1", BodyLength: 4, CostMs: 2, Success: true}, got[0], "null tags and keys read as none")
	require.Equal(t, "OFF", got[1].OffsetMsgID)
	require.True(t, got[1].Success)
	require.Equal(t, TraceRecord{Type: TraceSubBefore, Timestamp: 12, RegionID: "reg", Group: "cg", RequestID: "R",
		MsgID: "M1", Keys: "k"}, got[2])
	require.Equal(t, TraceRecord{Type: TraceSubAfter, RequestID: "R", MsgID: "M1", CostMs: 1, Success: true, Keys: "k"}, got[3])
	require.Equal(t, int64(13), got[4].Timestamp)
	require.Empty(t, got[4].Group)

	none, err := DecodeTraceRecords(nil)
	require.NoError(t, err)
	require.Empty(t, none)
}

// FuzzDecodeTraceRecords: any body decodes without panicking, and what decodes encodes
// to a body that decodes to the same records.
func FuzzDecodeTraceRecords(f *testing.F) {
	f.Add([]byte(joinTrace("Pub", "1", "r", "g", "T", "M", "t", "k", "h:1", "4", "2", "0", "O", "true", "c")))
	f.Add([]byte(joinTrace("SubBefore", "1", "r", "g", "R", "M", "0", "null", "c") +
		joinTrace("SubAfter", "R", "M", "1", "false", "null", "4", "2", "g")))
	f.Add([]byte(joinTrace("EndTransaction", "1", "r", "g", "T", "M", "t", "k", "h", "1", "X", "UNKNOW", "false")))
	f.Add([]byte(joinTrace("Pub", "1", "r") + "SubAfter\x01R\x01M\x01-9\x01x\x01k\x01+3"))
	f.Fuzz(func(t *testing.T, body []byte) {
		recs, _ := DecodeTraceRecords(body)
		var again []byte
		for i := range recs {
			again = AppendTraceRecord(again, &recs[i])
		}
		back, err := DecodeTraceRecords(again)
		require.NoError(t, err)
		require.Equal(t, len(recs), len(back))
		for i := range recs {
			require.Equal(t, recs[i], back[i])
		}
	})
}
