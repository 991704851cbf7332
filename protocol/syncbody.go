package protocol

// Bodies a slave reads from its master to copy the metadata that is not in the commit
// log (spec storage-and-broker.md §7.2): GET_ALL_CONSUMER_OFFSET (43) and
// GET_ALL_DELAY_OFFSET (45). GET_ALL_TOPIC_CONFIG (21) answers a
// [TopicConfigSerializeWrapper] and GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) a
// [SubscriptionGroupWrapper]. None of the requests has ext fields.

// ConsumerOffsetSerializeWrapper is the body of a GET_ALL_CONSUMER_OFFSET (43)
// response, the shape of RocketMQ's consumerOffset.json:
//
//	{"offsetTable":{"TopicA@cg":{0:12,1:7}}}
//
// Keys are "<topic>@<group>", then queue ids; Java writes the queue ids as fastjson's
// bare integers, Ferry as JSON strings ({"0":12}); both are read. 5.x's dataVersion is
// ignored.
type ConsumerOffsetSerializeWrapper struct {
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

// EncodeConsumerOffsetSerializeWrapper encodes w as compact JSON with sorted keys ({}
// when empty).
func EncodeConsumerOffsetSerializeWrapper(w *ConsumerOffsetSerializeWrapper) ([]byte, error) {
	table := w.OffsetTable
	if table == nil {
		table = map[string]map[int32]int64{}
	}
	return marshalBody("consumer offset table", ConsumerOffsetSerializeWrapper{OffsetTable: table})
}

// DecodeConsumerOffsetSerializeWrapper decodes a GET_ALL_CONSUMER_OFFSET body from Ferry
// or a Java broker. An empty table decodes as nil. Errors wrap ErrBadBody.
func DecodeConsumerOffsetSerializeWrapper(data []byte) (*ConsumerOffsetSerializeWrapper, error) {
	var w ConsumerOffsetSerializeWrapper
	if err := decodeJSON("consumer offset table", data, &w); err != nil {
		return nil, err
	}
	w.OffsetTable = nilMapIfEmpty(w.OffsetTable)
	return &w, nil
}

// DelayOffsetSerializeWrapper is the body of a GET_ALL_DELAY_OFFSET (45) response, the
// shape of RocketMQ's delayOffset.json: the next schedule-queue offset to deliver of each
// delay level (level n is queue n−1 of SCHEDULE_TOPIC_XXXX).
//
//	{"offsetTable":{1:123,2:0}}
//
// Bare integer keys (Java) and quoted ones (Ferry) are read; 5.x's dataVersion is
// ignored. A Ferry master adds its timer progress, which RocketMQ ignores as an unknown
// field:
//
//	{"offsetTable":{"1":123},"ferryTimerProgress":{"watermark":40,"delivered":[[42,45]]}}
type DelayOffsetSerializeWrapper struct {
	OffsetTable map[int32]int64 `json:"offsetTable"`
	// TimerProgress is the master's timer-queue progress (Ferry only; nil from RocketMQ).
	TimerProgress *TimerProgress `json:"ferryTimerProgress,omitempty"`
}

// TimerProgress is the delivery progress of the timer queue (TIMER_DELIVER_MS messages):
// every queue offset below Watermark is delivered, and so is each half-open range
// [start, end) of Delivered (sorted, above the watermark).
type TimerProgress struct {
	Watermark int64      `json:"watermark"`
	Delivered [][2]int64 `json:"delivered"`
}

// EncodeDelayOffsetSerializeWrapper encodes w as compact JSON with sorted levels ({}
// when empty).
func EncodeDelayOffsetSerializeWrapper(w *DelayOffsetSerializeWrapper) ([]byte, error) {
	table := w.OffsetTable
	if table == nil {
		table = map[int32]int64{}
	}
	return marshalBody("delay offset table", DelayOffsetSerializeWrapper{OffsetTable: table, TimerProgress: w.TimerProgress})
}

// DecodeDelayOffsetSerializeWrapper decodes a GET_ALL_DELAY_OFFSET body. An empty table
// decodes as nil. Errors wrap ErrBadBody.
func DecodeDelayOffsetSerializeWrapper(data []byte) (*DelayOffsetSerializeWrapper, error) {
	var w DelayOffsetSerializeWrapper
	if err := decodeJSON("delay offset table", data, &w); err != nil {
		return nil, err
	}
	w.OffsetTable = nilMapIfEmpty(w.OffsetTable)
	return &w, nil
}
