package client

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/message"
)

// Stored records become messages here (messageOf, decodeMessages), for the pulls of all
// consumers, the admin's queries and the requests a broker sends about one message.
//
// A pull answer holds up to a pull batch of records; each becomes a MessageExt whose body
// aliases the answer. What a message needs besides — its properties map, the strings in
// it, its offset message id, its topic — would cost it half a dozen allocations if made
// one by one. Instead a batch of records shares:
//
//   - one array of MessageExt, one per kept record, and the slice of pointers to them;
//   - one string holding, per kept record, its raw properties followed by its offset
//     message id; the property keys and values and OffsetMsgID are substrings of it;
//   - the topic string, while consecutive records have the same topic.
//
// so each message costs only its properties map. A message the caller keeps keeps the
// batch's array and string alive with it, as its body already keeps the answer.

// recordBatch is the array of records decodeMessages keeps before building their
// messages; a pull batch up to this many stays on the stack.
const recordBatch = 32

// messageOf builds the MessageExt of rec, a record stored on broker group broker, as
// stored: its queue is rec's topic and queue id on broker, its topic not mapped back from
// a retry topic (see restoreTopic), its body aliases rec's and is inflated when
// compressed. A body that does not inflate is left as stored and the error returned with
// the message.
func messageOf(rec *message.Record, broker string) (*MessageExt, error) {
	m := buildMessages([]message.Record{*rec}, broker)[0]
	return m, inflate(m, rec)
}

// decodeMessages decodes stored records laid end to end (the body of a pull, query or
// view answer) into messages of broker group broker (see messageOf); a body that does not
// inflate is kept as stored and logged to log. With sub only the consumable records (not
// half or rolled-back transactional ones) whose tags sub matches are kept — what a
// broker's tag-hash filter let through by collision is dropped; the others are never
// built. A malformed record ends the decoding: the messages before it come back with the
// error.
func decodeMessages(data []byte, broker string, sub *subscription, log *zerolog.Logger) ([]*MessageExt, error) {
	recs := make([]message.Record, 0, recordBatch)
	var bad error
	for i, b := 0, data; len(b) > 0; i++ {
		recs = append(recs, message.Record{})
		rec := &recs[len(recs)-1]
		n, err := rec.Decode(b)
		if err != nil {
			recs = recs[:len(recs)-1]
			bad = fmt.Errorf("client: stored record %d: %w", i, err)
			break
		}
		b = b[n:]
		if sub != nil && (!message.IsConsumable(rec.SysFlag) || !sub.matchesRaw(rec.Properties)) {
			recs = recs[:len(recs)-1]
		}
	}
	if len(recs) == 0 {
		return nil, bad
	}
	msgs := buildMessages(recs, broker)
	for i, m := range msgs {
		if err := inflate(m, &recs[i]); err != nil {
			log.Warn().Err(err).Str("msgID", m.MsgID).Msg("cannot inflate body; delivering it as stored")
		}
	}
	return msgs, bad
}

// buildMessages builds the messages of recs (not empty) sharing one array and one string
// (see the top of this file); their bodies are still as stored.
func buildMessages(recs []message.Record, broker string) []*MessageExt {
	size := 0
	for i := range recs {
		size += len(recs[i].Properties) + offsetMsgIDLen(&recs[i])
	}
	var sb strings.Builder
	sb.Grow(size)
	var id [message.OffsetMsgIDLenV6]byte
	for i := range recs {
		sb.Write(recs[i].Properties)
		sb.Write(message.AppendOffsetMsgID(id[:0], recs[i].StoreHost, recs[i].PhysicalOffset))
	}
	text := sb.String()

	exts := make([]MessageExt, len(recs))
	out := make([]*MessageExt, len(recs))
	var topic string
	for i := range recs {
		rec := &recs[i]
		if i == 0 || string(rec.Topic) != topic {
			topic = string(rec.Topic)
		}
		props := text[:len(rec.Properties)]
		idLen := offsetMsgIDLen(rec)
		offsetID := text[len(props) : len(props)+idLen]
		text = text[len(props)+idLen:]
		m := &exts[i]
		*m = MessageExt{
			Message: message.Message{Topic: topic, Flag: rec.Flag, Body: rec.Body,
				Properties: parseProperties(props)},
			OffsetMsgID: offsetID, Queue: MessageQueue{Topic: topic, BrokerName: broker, QueueID: rec.QueueID},
			QueueOffset: rec.QueueOffset, CommitLogOffset: rec.PhysicalOffset, ReconsumeTimes: rec.ReconsumeTimes,
			BornTime: time.UnixMilli(rec.BornTimestamp), StoreTime: time.UnixMilli(rec.StoreTimestamp),
			BornHost: rec.BornHost, StoreHost: rec.StoreHost, SysFlag: rec.SysFlag,
		}
		m.MsgID = cmp.Or(m.UniqKey(), offsetID)
		out[i] = m
	}
	return out
}

// offsetMsgIDLen is the length of rec's offset message id.
func offsetMsgIDLen(rec *message.Record) int {
	if rec.StoreHost.Addr().Is4() {
		return message.OffsetMsgIDLenV4
	}
	return message.OffsetMsgIDLenV6
}

// inflate replaces m's body, rec's, by its inflated form when rec is compressed; a body
// that does not inflate stays as stored and the error is returned.
func inflate(m *MessageExt, rec *message.Record) error {
	if !message.IsZlibCompressed(rec.SysFlag) {
		return nil
	}
	body, err := message.Decompress(rec.Body, 0)
	if err != nil {
		return err
	}
	m.Body = body
	return nil
}

// parseProperties is message.ParseProperties of raw properties held in a string: the
// same pairs (a fragment counts only with exactly one separator after a non-empty key;
// the last of a repeated key wins), with keys and values that are substrings of props.
func parseProperties(props string) map[string]string {
	m := make(map[string]string, strings.Count(props, string(message.PropertySeparator))+1)
	for rest := props; len(rest) > 0; {
		frag := rest
		if i := strings.IndexByte(rest, message.PropertySeparator); i >= 0 {
			frag, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		i := strings.IndexByte(frag, message.NameValueSeparator)
		if i <= 0 || strings.IndexByte(frag[i+1:], message.NameValueSeparator) >= 0 {
			continue
		}
		m[frag[:i]] = frag[i+1:]
	}
	return m
}

// restoreTopic gives a message of retryTopic (a group's retry topic) back the topic it
// was first sent to; its Queue stays the retry topic's.
func restoreTopic(m *MessageExt, retryTopic string) {
	if m.Topic != retryTopic {
		return
	}
	if orig := m.Property(message.PropertyRetryTopic); orig != "" {
		m.Topic = orig
	}
}
