package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ferrymq/ferry/client"
	"github.com/ferrymq/ferry/message"
	"github.com/ferrymq/ferry/protocol"
)

// dlq list and dlq resend: a consumer group's dead letters (%DLQ%GROUP) and sending them
// back to the topic they were first sent to.
//
// Reading the DLQ: Ferry creates %DLQ%GROUP readable and writable (perm 6), so ferryctl
// reads it as it reads any topic, with pulls as the TOOLS_CONSUMER group
// (client.Admin.MessagesByTime). RocketMQ creates it write-only (perm 2) and refuses pulls
// of it with NO_PERMISSION; ferryctl does not change the topic's permission behind the
// operator's back but says how to (topic update -p 6).
//
// The original topic: the broker that moves a message to the DLQ keeps (or adds) the
// RETRY_TOPIC property, the topic the message was first sent to, and ORIGIN_MESSAGE_ID,
// its first id; RocketMQ 5 brokers also write DLQ_ORIGIN_TOPIC and DLQ_ORIGIN_MESSAGE_ID,
// read when the first are absent.

// resendDropped are the properties a resent dead letter leaves behind: the broker's
// bookkeeping of its retries, delays, transactions and dead-lettering. Body, flag, tags,
// keys, UNIQ_KEY (so the resent copy keeps the message's id) and user properties stay.
var resendDropped = []string{
	message.PropertyRetryTopic, message.PropertyOriginMessageID, message.PropertyDLQOriginTopic,
	message.PropertyDLQOriginMessageID, message.PropertyReconsumeTime, message.PropertyMaxReconsumeTimes,
	message.PropertyDelayLevel, message.PropertyTimerDeliverMs, message.PropertyTimerDelaySec,
	message.PropertyTimerDelayMs, message.PropertyTimerOutMs, message.PropertyRealTopic, message.PropertyRealQueueID,
	message.PropertyTransactionPrepared, message.PropertyProducerGroup, message.PropertyTransactionID,
	message.PropertyTransactionCheckTimes, message.PropertyTransactionPreparedQueueOffset,
	message.PropertyCheckImmunityTimeInSeconds, message.PropertyMinOffset, message.PropertyMaxOffset,
	message.PropertyConsumeStartTime, message.PropertyCluster, message.PropertyWaitStoreMsgOK,
}

// dlqResendGroup is the producer group dlq resend sends as.
const dlqResendGroup = "FERRYCTL_DLQ_RESEND"

// dlqMessageOut is one dead letter in dlq list's output (stable field names).
type dlqMessageOut struct {
	MsgID          string   `json:"msgId" yaml:"msgId"`
	OriginMsgID    string   `json:"originMsgId" yaml:"originMsgId"`
	OriginTopic    string   `json:"originTopic" yaml:"originTopic"`
	OffsetMsgID    string   `json:"offsetMsgId" yaml:"offsetMsgId"`
	Broker         string   `json:"broker" yaml:"broker"`
	QueueOffset    int64    `json:"queueOffset" yaml:"queueOffset"`
	ReconsumeTimes int32    `json:"reconsumeTimes" yaml:"reconsumeTimes"`
	StoreTime      string   `json:"storeTime" yaml:"storeTime"`
	BornTime       string   `json:"bornTime" yaml:"bornTime"`
	Tags           string   `json:"tags,omitempty" yaml:"tags,omitempty"`
	Keys           []string `json:"keys,omitempty" yaml:"keys,omitempty"`
	BodySize       int      `json:"bodySize" yaml:"bodySize"`
	Body           string   `json:"body,omitempty" yaml:"body,omitempty"`
	BodyEncoding   string   `json:"bodyEncoding,omitempty" yaml:"bodyEncoding,omitempty"`
}

// dlqListOut is dlq list's output.
type dlqListOut struct {
	Group     string          `json:"group" yaml:"group"`
	Topic     string          `json:"topic" yaml:"topic"`
	Count     int             `json:"count" yaml:"count"`
	Truncated bool            `json:"truncated" yaml:"truncated"`
	Messages  []dlqMessageOut `json:"messages" yaml:"messages"`
}

// dlqResentOut is one resent dead letter.
type dlqResentOut struct {
	MsgID       string `json:"msgId" yaml:"msgId"`
	OriginTopic string `json:"originTopic" yaml:"originTopic"`
	NewMsgID    string `json:"newMsgId" yaml:"newMsgId"`
	OffsetMsgID string `json:"offsetMsgId" yaml:"offsetMsgId"`
	Broker      string `json:"broker" yaml:"broker"`
	QueueID     int32  `json:"queueId" yaml:"queueId"`
}

// dlqResendOut is dlq resend's output.
type dlqResendOut struct {
	Group   string         `json:"group" yaml:"group"`
	Resent  int            `json:"resent" yaml:"resent"`
	Skipped int            `json:"skipped" yaml:"skipped"` // without an original topic
	Results []dlqResentOut `json:"results" yaml:"results"`
}

// originTopic is the topic a dead letter was first sent to, or "".
func originTopic(m *client.MessageExt) string {
	if t := m.Property(message.PropertyRetryTopic); t != "" {
		return t
	}
	return m.Property(message.PropertyDLQOriginTopic)
}

// originMsgID is a dead letter's first id.
func originMsgID(m *client.MessageExt) string {
	for _, k := range []string{message.PropertyOriginMessageID, message.PropertyDLQOriginMessageID} {
		if id := m.Property(k); id != "" {
			return id
		}
	}
	return m.MsgID
}

// dlqMessages reads group's dead letters, explaining a refusal to read the topic.
func dlqMessages(ctx context.Context, a *client.Admin, group string, maxNum int) ([]*client.MessageExt, bool, error) {
	topic := protocol.DLQTopic(group)
	msgs, truncated, err := a.MessagesByTime(ctx, topic, time.Time{}, time.Time{}, maxNum)
	switch {
	case errors.Is(err, client.ErrNoRoute):
		return nil, false, fmt.Errorf("group %s has no dead-letter topic %s (nothing was dead-lettered, or the name servers do not know it yet): %w", group, topic, err)
	case errors.Is(err, client.ErrNoPermission):
		return nil, false, fmt.Errorf("%w (a RocketMQ broker creates %s write-only; if so, make it readable: ferryctl topic update -t %s -p 6)", err, topic, topic)
	}
	return msgs, truncated, err
}

// resendable is the message that sends dead letter m back to its original topic.
func resendable(m *client.MessageExt) *message.Message {
	out := &message.Message{Topic: originTopic(m), Flag: m.Flag, Body: m.Body, Properties: maps.Clone(m.Properties)}
	for _, k := range resendDropped {
		delete(out.Properties, k)
	}
	return out
}

func newDLQCommand(e *env) *cobra.Command {
	var (
		grp, id string
		all     bool
		maxNum  int
		bo      bodyOptions
	)
	list := &cobra.Command{
		Use:   "list -g GROUP [--max N]",
		Short: "A consumer group's dead letters (%DLQ%GROUP): original topic, id, reconsume times, store time",
		Example: `  ferryctl dlq list -g billing
  ferryctl dlq list -g billing -o json --max 100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grp == "" {
				return usageError("-g/--group is required")
			}
			if maxNum <= 0 {
				return usageError("--max must be positive, not %d", maxNum)
			}
			if err := bo.check(); err != nil {
				return err
			}
			return e.withAdmin(func(a *client.Admin) error {
				msgs, truncated, err := dlqMessages(cmd.Context(), a, grp, maxNum)
				if err != nil {
					return err
				}
				out := dlqListOut{Group: grp, Topic: protocol.DLQTopic(grp), Count: len(msgs), Truncated: truncated,
					Messages: make([]dlqMessageOut, len(msgs))}
				for i, m := range msgs {
					d := dlqMessageOut{MsgID: m.MsgID, OriginMsgID: originMsgID(m), OriginTopic: originTopic(m),
						OffsetMsgID: m.OffsetMsgID, Broker: m.Queue.BrokerName, QueueOffset: m.QueueOffset,
						ReconsumeTimes: m.ReconsumeTimes, StoreTime: rfc3339(m.StoreTime), BornTime: rfc3339(m.BornTime),
						Tags: m.Tags(), Keys: m.Keys(), BodySize: len(m.Body)}
					d.Body, d.BodyEncoding = bo.render(m.Body)
					out.Messages[i] = d
				}
				if truncated {
					fmt.Fprintln(e.errOut, truncationNote(maxNum))
				}
				return e.emit(out, func(w io.Writer) {
					fmt.Fprintln(w, "STORE TIME\tORIGINAL TOPIC\tMSG ID\tRECONSUME TIMES\tTAGS\tKEYS\tBODY")
					for _, m := range out.Messages {
						fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", m.StoreTime, m.OriginTopic, m.MsgID, m.ReconsumeTimes, m.Tags,
							strings.Join(m.Keys, " "), m.Body)
					}
					fmt.Fprintf(w, "%d dead letters\n", out.Count)
				})
			})
		},
	}
	list.Flags().StringVarP(&grp, "group", "g", "", "consumer group (required)")
	list.Flags().IntVar(&maxNum, "max", defaultListMax, "show at most this many dead letters (the oldest)")
	bodyFlags(list, &bo)

	resend := &cobra.Command{
		Use:   "resend -g GROUP (-i ID | --all)",
		Short: "Send dead letters back to the topic they were first sent to",
		Long: "resend sends dead letters of the group back to their original topic (the RETRY_TOPIC\n" +
			"property the broker set when the message first failed), as new messages with the same body,\n" +
			"flag, tags, keys, id (UNIQ_KEY) and user properties; the broker's retry and dead-letter\n" +
			"bookkeeping is left behind. -i picks one by its id (msgId, originMsgId or offsetMsgId of\n" +
			"dlq list); --all takes every one (up to --max). The dead letters stay in the DLQ: resending\n" +
			"twice delivers twice. Every consumer group of the original topic gets the resent copy.",
		Example: `  ferryctl dlq resend -g billing -i C0A8000100002A9F0000000000000001
  ferryctl dlq resend -g billing --all -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case grp == "":
				return usageError("-g/--group is required")
			case (id == "") == !all:
				return usageError("give exactly one of -i/--id and --all")
			case maxNum <= 0:
				return usageError("--max must be positive, not %d", maxNum)
			}
			c, err := e.newClient()
			if err != nil {
				return err
			}
			defer func() { _ = c.Close() }()
			ctx := cmd.Context()
			msgs, truncated, err := dlqMessages(ctx, c.Admin(), grp, maxNum)
			if err != nil {
				return err
			}
			if id != "" {
				var picked []*client.MessageExt
				for _, m := range msgs {
					if strings.EqualFold(m.MsgID, id) || strings.EqualFold(m.OffsetMsgID, id) || strings.EqualFold(originMsgID(m), id) {
						picked = append(picked, m)
					}
				}
				if len(picked) == 0 {
					return fmt.Errorf("%w: no dead letter of group %s has id %s", client.ErrNotFound, grp, id)
				}
				msgs = picked[:1] // a producer's retry may have stored the same message twice
			} else if truncated {
				fmt.Fprintln(e.errOut, truncationNote(maxNum))
			}
			p, err := c.NewProducer(dlqResendGroup)
			if err != nil {
				return err
			}
			defer func() { _ = p.Close() }()
			out := dlqResendOut{Group: grp, Results: []dlqResentOut{}}
			for _, m := range msgs {
				msg := resendable(m)
				if msg.Topic == "" {
					out.Skipped++
					fmt.Fprintf(e.errOut, "ferryctl: dead letter %s has no original topic (no %s property): skipped\n",
						m.MsgID, message.PropertyRetryTopic)
					continue
				}
				r, err := p.Send(ctx, msg)
				if err != nil {
					return fmt.Errorf("resend %s to %s (%d resent before it): %w", m.MsgID, msg.Topic, out.Resent, err)
				}
				out.Resent++
				out.Results = append(out.Results, dlqResentOut{MsgID: m.MsgID, OriginTopic: msg.Topic, NewMsgID: r.MsgID,
					OffsetMsgID: r.OffsetMsgID, Broker: r.BrokerName, QueueID: r.QueueID})
			}
			return e.emit(out, func(w io.Writer) {
				fmt.Fprintln(w, "MSG ID\tTO TOPIC\tBROKER\tQUEUE\tNEW OFFSET MSG ID")
				for _, r := range out.Results {
					fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\n", r.MsgID, r.OriginTopic, r.Broker, r.QueueID, r.OffsetMsgID)
				}
				fmt.Fprintf(w, "%d resent, %d skipped\n", out.Resent, out.Skipped)
			})
		},
	}
	resend.Flags().StringVarP(&grp, "group", "g", "", "consumer group (required)")
	resend.Flags().StringVarP(&id, "id", "i", "", "the dead letter's id (msgId, originMsgId or offsetMsgId)")
	resend.Flags().BoolVar(&all, "all", false, "every dead letter of the group")
	resend.Flags().IntVar(&maxNum, "max", defaultListMax, "with --all: at most this many (the oldest)")
	return group("dlq", "A consumer group's dead-letter queue: list and resend", list, resend)
}
