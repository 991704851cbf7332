package message

// ReservedPropertyPrefix starts the names of the properties Ferry's broker keeps for
// itself (for example the transaction service's check schedule); producers' values for
// them are never trusted.
const ReservedPropertyPrefix = "FERRY_"

// SendProps is what the send path decides on, read from a message's properties in one
// pass (ScanProperties): the broker's send handler, the transaction prepare and the
// schedule rewrite all use it instead of looking each property up again. Values alias
// the scanned bytes; a field is nil when the property is absent (a present property with
// an empty value is an empty, non-nil slice). When a key occurs more than once the last
// occurrence wins, as in LookupProperty.
type SendProps struct {
	UniqKey        []byte // UNIQ_KEY
	Cluster        []byte // CLUSTER
	Wait           []byte // WAIT
	TranPrepared   []byte // TRAN_MSG
	ProducerGroup  []byte // PGROUP
	DelayLevel     []byte // DELAY
	TimerDelaySec  []byte // TIMER_DELAY_SEC
	TimerDelayMs   []byte // TIMER_DELAY_MS
	TimerDeliverMs []byte // TIMER_DELIVER_MS
	RealTopic      []byte // REAL_TOPIC
	RealQueueID    []byte // REAL_QID
	TimerOutMs     []byte // TIMER_OUT_MS
	TransactionID  []byte // __transactionId__
	CheckTimes     []byte // TRANSACTION_CHECK_TIMES
	ReplyToClient  []byte // REPLY_TO_CLIENT: the requester of a request-reply message
	// Bookkeeping counts the properties only the broker writes for its own use and does
	// not take from a producer: REAL_TOPIC, REAL_QID, __transactionId__,
	// TRANSACTION_CHECK_TIMES, TRAN_PREPARED_QUEUE_OFFSET and every key with Ferry's
	// reserved prefix (ReservedPropertyPrefix). Zero means a prepared message has nothing
	// to strip.
	Bookkeeping int
}

// ScanProperties reads props once and returns the send-path properties. It does not
// allocate.
func ScanProperties(props []byte) SendProps {
	var s SendProps
	for rest := props; len(rest) > 0; {
		var frag []byte
		frag, rest = nextFragment(rest)
		k, v, ok := splitPair(frag)
		if !ok {
			continue
		}
		s.set(k, v)
	}
	return s
}

// set records one pair.
func (s *SendProps) set(k, v []byte) {
	switch string(k) {
	case PropertyUniqKey:
		s.UniqKey = v
	case PropertyCluster:
		s.Cluster = v
	case PropertyReplyToClient:
		s.ReplyToClient = v
	case PropertyWaitStoreMsgOK:
		s.Wait = v
	case PropertyTransactionPrepared:
		s.TranPrepared = v
	case PropertyProducerGroup:
		s.ProducerGroup = v
	case PropertyDelayLevel:
		s.DelayLevel = v
	case PropertyTimerDelaySec:
		s.TimerDelaySec = v
	case PropertyTimerDelayMs:
		s.TimerDelayMs = v
	case PropertyTimerDeliverMs:
		s.TimerDeliverMs = v
	case PropertyRealTopic:
		s.RealTopic = v
		s.Bookkeeping++
	case PropertyRealQueueID:
		s.RealQueueID = v
		s.Bookkeeping++
	case PropertyTimerOutMs:
		s.TimerOutMs = v
	case PropertyTransactionID:
		s.TransactionID = v
		s.Bookkeeping++
	case PropertyTransactionCheckTimes:
		s.CheckTimes = v
		s.Bookkeeping++
	case PropertyTransactionPreparedQueueOffset:
		s.Bookkeeping++
	default:
		if len(k) > len(ReservedPropertyPrefix) && string(k[:len(ReservedPropertyPrefix)]) == ReservedPropertyPrefix {
			s.Bookkeeping++
		}
	}
}

// WaitStore reports whether a sync-flush send waits for durability: the WAIT property,
// true unless it says "false".
func (s *SendProps) WaitStore() bool { return string(s.Wait) != "false" }

// IsPrepared reports whether the properties mark the first phase of a transaction
// (TRAN_MSG=true). The sysflag's transaction type says the same; either is enough.
func (s *SendProps) IsPrepared() bool { return string(s.TranPrepared) == "true" }

// HasDelayLevel reports whether DELAY names a level (anything but absent, empty or "0").
func (s *SendProps) HasDelayLevel() bool {
	return len(s.DelayLevel) > 0 && string(s.DelayLevel) != "0"
}
