package protocol

import "github.com/ferrymq/ferry/remoting"

// VIEW_BROKER_STATS_DATA (315): one of a broker's traffic statistics over the last
// minute, hour and day, as RocketMQ's mqadmin statsAll reads it.
//
// Header (ext fields, both required):
//
//	statsName   the statistic: TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, GROUP_GET_NUMS, GROUP_GET_SIZE
//	statsKey    what it is kept for: "TOPIC" for the TOPIC_ ones, "TOPIC@GROUP" for the GROUP_ ones
//
// Body of the SUCCESS answer, JSON ([BrokerStatsData]):
//
//	{"statsMinute":{"sum":N,"tps":F,"avgpt":F},"statsHour":{…},"statsDay":{…}}
//
// sum is the count (messages or bytes) added during the window, tps that sum per second
// of the window, and avgpt the sum per counting call (per send request or pull answer).
// A statistic the broker has not counted anything for since it started is answered
// SYSTEM_ERROR with a remark saying it does not exist (RocketMQ's answer).

// Statistic names of VIEW_BROKER_STATS_DATA.
const (
	StatsTopicPutNums = "TOPIC_PUT_NUMS" // messages stored in a topic
	StatsTopicPutSize = "TOPIC_PUT_SIZE" // bytes stored in a topic
	StatsGroupGetNums = "GROUP_GET_NUMS" // messages a group pulled from a topic
	StatsGroupGetSize = "GROUP_GET_SIZE" // bytes a group pulled from a topic
)

// Keys of the VIEW_BROKER_STATS_DATA header.
const (
	statsNameKey = "statsName"
	statsKeyKey  = "statsKey"
)

// StatsKeySeparator joins a topic and a group in the key of a GROUP_ statistic.
const StatsKeySeparator = "@"

// ViewBrokerStatsDataRequestHeader is the header of VIEW_BROKER_STATS_DATA (315). No
// body; the answer's body is a [BrokerStatsData].
//
// Required: statsName, statsKey.
type ViewBrokerStatsDataRequestHeader struct {
	StatsName string // statsName (required)
	StatsKey  string // statsKey (required)
}

// EncodeExt implements Header.
func (h *ViewBrokerStatsDataRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, statsNameKey, h.StatsName)
	setStr(ext, statsKeyKey, h.StatsKey)
}

// DecodeExt implements Header.
func (h *ViewBrokerStatsDataRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = ViewBrokerStatsDataRequestHeader{StatsName: r.str(statsNameKey, true), StatsKey: r.str(statsKeyKey, true)}
	return r.err
}

// BrokerStatsItem is one window of a [BrokerStatsData].
type BrokerStatsItem struct {
	Sum   int64   `json:"sum"`   // counted during the window
	TPS   float64 `json:"tps"`   // Sum per second
	AvgPT float64 `json:"avgpt"` // Sum per counting call
}

// BrokerStatsData is the body of a VIEW_BROKER_STATS_DATA answer.
type BrokerStatsData struct {
	StatsMinute BrokerStatsItem `json:"statsMinute"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsDay    BrokerStatsItem `json:"statsDay"`
}

// EncodeBrokerStatsData encodes d as compact JSON.
func EncodeBrokerStatsData(d *BrokerStatsData) ([]byte, error) {
	return marshalBody("broker stats data", d)
}

// DecodeBrokerStatsData decodes a BrokerStatsData body. Errors wrap ErrBadBody.
func DecodeBrokerStatsData(data []byte) (*BrokerStatsData, error) {
	var d BrokerStatsData
	if err := decodeJSON("broker stats data", data, &d); err != nil {
		return nil, err
	}
	return &d, nil
}
