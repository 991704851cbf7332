package tools

import (
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// traceOut is a message's trace timeline in `message trace` output (stable field names).
type traceOut struct {
	MsgID      string          `json:"msgId" yaml:"msgId"`
	TraceTopic string          `json:"traceTopic" yaml:"traceTopic"`
	Events     []traceEventOut `json:"events" yaml:"events"`
}

// Events of a trace timeline.
const (
	traceEventSend    = "send"
	traceEventConsume = "consume"
	traceEventEndTx   = "end-transaction"
)

// traceEventOut is one step of a message's trace: a send (Pub record), a consume
// (SubBefore and SubAfter records of one handler call, joined by request id) or a
// transaction's end (EndTransaction). Fields that do not apply to the event are left out.
type traceEventOut struct {
	Event      string `json:"event" yaml:"event"`
	Time       string `json:"time,omitempty" yaml:"time,omitempty"` // RFC 3339, UTC
	Group      string `json:"group" yaml:"group"`
	ClientHost string `json:"clientHost,omitempty" yaml:"clientHost,omitempty"`
	CostMs     int64  `json:"costMs" yaml:"costMs"`
	Success    bool   `json:"success" yaml:"success"`
	// Status: SEND_OK or SEND_FAILED; CONSUMED, CONSUME_FAILED or NO_RESULT (a
	// SubBefore record without its SubAfter: the handler still running, or its record
	// lost); a transaction's state.
	Status          string `json:"status" yaml:"status"`
	Region          string `json:"region,omitempty" yaml:"region,omitempty"`
	Topic           string `json:"topic,omitempty" yaml:"topic,omitempty"`
	Tags            string `json:"tags,omitempty" yaml:"tags,omitempty"`
	Keys            string `json:"keys,omitempty" yaml:"keys,omitempty"`
	BodyLength      int    `json:"bodyLength,omitempty" yaml:"bodyLength,omitempty"`
	MsgType         int    `json:"msgType,omitempty" yaml:"msgType,omitempty"`
	StoreHost       string `json:"storeHost,omitempty" yaml:"storeHost,omitempty"`
	OffsetMsgID     string `json:"offsetMsgId,omitempty" yaml:"offsetMsgId,omitempty"`
	CommitLogOffset *int64 `json:"commitLogOffset,omitempty" yaml:"commitLogOffset,omitempty"`
	RequestID       string `json:"requestId,omitempty" yaml:"requestId,omitempty"`
	RetryTimes      *int   `json:"retryTimes,omitempty" yaml:"retryTimes,omitempty"`
	TransactionID   string `json:"transactionId,omitempty" yaml:"transactionId,omitempty"`

	at int64 // ms since the epoch, for sorting (0: unknown)
}

// traceTimeline turns the trace records of message id into its events, ordered by time
// (events without one last), duplicates removed.
func traceTimeline(id string, recs []client.TraceRecord) []traceEventOut {
	var events []traceEventOut
	seen := map[client.TraceRecord]bool{}
	consumes := map[string]int{} // request id → index in events
	consume := func(reqID string) *traceEventOut {
		if i, ok := consumes[reqID]; ok {
			return &events[i]
		}
		consumes[reqID] = len(events)
		events = append(events, traceEventOut{Event: traceEventConsume, RequestID: reqID, Status: "NO_RESULT"})
		return &events[len(events)-1]
	}
	for _, r := range recs {
		if r.MsgID != id || seen[r] {
			continue
		}
		seen[r] = true
		switch r.Type {
		case client.TracePub:
			// The Go clients stamp a Pub record when the answer came, Java's when the send
			// began: the timeline places a send at its beginning (stamp minus cost), before
			// any consume of its message.
			ev := traceEventOut{Event: traceEventSend, Time: msTime(r.Timestamp), at: r.Timestamp - r.CostMs, Group: r.Group,
				ClientHost: r.ClientHost, CostMs: r.CostMs, Success: r.Success, Status: "SEND_FAILED", Region: r.RegionID,
				Topic: r.Topic, Tags: r.Tags, Keys: r.Keys, BodyLength: r.BodyLength, MsgType: r.MsgType,
				StoreHost: r.StoreHost, OffsetMsgID: r.OffsetMsgID}
			if r.Success {
				ev.Status = "SEND_OK"
			}
			if _, off, err := message.DecodeOffsetMsgID(r.OffsetMsgID); err == nil {
				ev.CommitLogOffset = &off
			}
			events = append(events, ev)
		case client.TraceSubBefore:
			ev := consume(r.RequestID)
			ev.Time, ev.at, ev.Group, ev.ClientHost, ev.Region = msTime(r.Timestamp), r.Timestamp, r.Group, r.ClientHost, r.RegionID
			ev.Keys, ev.RetryTimes = r.Keys, &r.RetryTimes
		case client.TraceSubAfter:
			ev := consume(r.RequestID)
			ev.CostMs, ev.Success, ev.Status = r.CostMs, r.Success, "CONSUME_FAILED"
			if r.Success {
				ev.Status = "CONSUMED"
			}
			if ev.Group == "" {
				ev.Group = r.Group
			}
			if ev.at == 0 && r.Timestamp > 0 { // no SubBefore (yet): the handler's end
				ev.Time, ev.at = msTime(r.Timestamp-r.CostMs), r.Timestamp-r.CostMs
			}
			if ev.Keys == "" {
				ev.Keys = r.Keys
			}
		case client.TraceEndTransaction:
			events = append(events, traceEventOut{Event: traceEventEndTx, Time: msTime(r.Timestamp), at: r.Timestamp,
				Group: r.Group, Status: r.TransactionState, Success: r.TransactionState == "COMMIT_MESSAGE",
				Region: r.RegionID, Topic: r.Topic, Tags: r.Tags, Keys: r.Keys, MsgType: r.MsgType,
				StoreHost: r.StoreHost, TransactionID: r.TransactionID})
		}
	}
	slices.SortStableFunc(events, func(a, b traceEventOut) int {
		switch {
		case a.at == 0 && b.at != 0:
			return 1
		case b.at == 0 && a.at != 0:
			return -1
		}
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(traceEventRank(a.Event), traceEventRank(b.Event)) // same millisecond: send first
	})
	return events
}

// traceEventRank orders events of the same millisecond as they happen to a message.
func traceEventRank(event string) int {
	switch event {
	case traceEventSend:
		return 0
	case traceEventEndTx:
		return 1
	default:
		return 2
	}
}

// validTraceID checks the shape of a message id: 32 or 56 hex characters.
func validTraceID(id string) error {
	if len(id) != message.OffsetMsgIDLenV4 && len(id) != message.OffsetMsgIDLenV6 {
		return fmt.Errorf("message id %q: want 32 or 56 hex characters (the msgId a send printed)", id)
	}
	if _, err := hex.DecodeString(id); err != nil {
		return fmt.Errorf("message id %q: not hex: %w", id, err)
	}
	return nil
}

func newTraceCommand(e *env) *cobra.Command {
	var id, topic string
	cmd := &cobra.Command{
		Use:   "trace -i MSGID [--trace-topic TOPIC]",
		Short: "Show a message's trace: its sends and consumes, as the clients recorded them",
		Long: "trace finds the message-trace records clients stored for a message (RocketMQ's\n" +
			"format: Ferry's client with WithTrace, the official clients with tracing on) in the\n" +
			"trace topic, by the message id (QUERY_MESSAGE by key), and prints them as a timeline:\n" +
			"each send (producer group, client host, time, cost, status, store host, offset) and\n" +
			"each consume (group, client host, time, cost, outcome).",
		Args: cobra.NoArgs,
		Example: `  ferryctl message trace -i C0A80001A1B218B4AAC20A4F7B2C0000
  ferryctl message trace -i C0A80001A1B218B4AAC20A4F7B2C0000 --trace-topic MyTraces -o json`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if id == "" {
				return usageError("-i/--id is required")
			}
			if err := validTraceID(id); err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				found, err := a.QueryByKey(cmd.Context(), topic, id, time.Time{}, time.Time{}, 0)
				if errors.Is(err, client.ErrNotFound) {
					return fmt.Errorf("no trace records of message %s in %s (do its clients trace? Ferry's client: client.WithTrace)", id, topic)
				}
				if err != nil {
					return err
				}
				var recs []client.TraceRecord
				for _, m := range found {
					rs, err := client.DecodeTraceRecords(m.Body)
					if err != nil {
						fmt.Fprintf(e.errOut, "ferryctl: warning: trace message %s: %v\n", m.MsgID, err)
					}
					recs = append(recs, rs...)
				}
				out := traceOut{MsgID: id, TraceTopic: topic, Events: traceTimeline(id, recs)}
				if len(out.Events) == 0 {
					return fmt.Errorf("no trace records of message %s in %s: the trace messages found by its id hold none of it", id, topic)
				}
				return e.emit(out, func(w io.Writer) { printTrace(w, out) })
			})
		},
	}
	cmd.Flags().StringVarP(&id, "id", "i", "", "message id (the client id, UNIQ_KEY, a send printed as msgId)")
	cmd.Flags().StringVar(&topic, "trace-topic", protocol.TraceTopic, "trace topic the clients write to")
	return cmd
}

// printTrace writes a trace as a table.
func printTrace(w io.Writer, t traceOut) {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return printable(s)
	}
	fmt.Fprintf(w, "message %s, trace topic %s\n", t.MsgID, t.TraceTopic)
	fmt.Fprintln(w, "TIME\tEVENT\tGROUP\tCLIENT HOST\tCOST\tSTATUS\tSTORE HOST\tCOMMIT-LOG OFFSET\tRETRIES")
	for _, ev := range t.Events {
		off, retries := "-", "-"
		if ev.CommitLogOffset != nil {
			off = strconv.FormatInt(*ev.CommitLogOffset, 10)
		}
		if ev.RetryTimes != nil {
			retries = strconv.Itoa(*ev.RetryTimes)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%dms\t%s\t%s\t%s\t%s\n", dash(ev.Time), ev.Event, dash(ev.Group),
			dash(ev.ClientHost), ev.CostMs, dash(ev.Status), dash(ev.StoreHost), off, retries)
	}
}
