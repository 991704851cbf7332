package protocol

import "github.com/ferrymq/ferry/remoting"

// Broker admin headers, used by ferryctl and Java's mqadmin:
// UPDATE_AND_CREATE_TOPIC (17), GET_BROKER_CONFIG (26, response),
// GET_TOPIC_STATS_INFO (202), GET_CONSUMER_CONNECTION_LIST (203),
// GET_PRODUCER_CONNECTION_LIST (204), DELETE_SUBSCRIPTIONGROUP (207),
// GET_CONSUME_STATS (208), DELETE_TOPIC_IN_BROKER (215) and
// QUERY_TOPIC_CONSUME_BY_WHO (300).
//
// Requests without a header: GET_ALL_TOPIC_CONFIG (21, body
// [TopicConfigSerializeWrapper]), UPDATE_BROKER_CONFIG (25, body in the
// properties text format, see [EncodeConfigProperties]), GET_BROKER_CONFIG
// (26, same format in the response), GET_BROKER_RUNTIME_INFO (28, response
// body [KVTable]), UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200, body
// [SubscriptionGroupConfig]) and GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201,
// response body [SubscriptionGroupWrapper]).

import "strings"

// Keys of the broker admin headers.
const (
	createDefaultTopic    = "defaultTopic"
	createReadQueueNums   = "readQueueNums"
	createWriteQueueNums  = "writeQueueNums"
	createPerm            = "perm"
	createTopicFilterType = "topicFilterType"
	createTopicSysFlag    = "topicSysFlag"
	createOrder           = "order"
	createAttributes      = "attributes"
	createForce           = "force"
	brokerConfigVersion   = "version"
	statsTopicList        = "topicList"
	producerGroupKey      = "producerGroup"
	groupNameKey          = "groupName"
	cleanOffsetKey        = "cleanOffset"  // Java 5.x
	removeOffsetKey       = "removeOffset" // Java 4.x
)

// CreateTopicRequestHeader is the header of UPDATE_AND_CREATE_TOPIC (17). No
// body. The broker validates the name (INVALID_PARAMETER for bad or system
// topics), creates or replaces the topic's config, persists it, registers
// with the name servers before answering SUCCESS so the route exists for
// the caller's next step, and answers SUCCESS without change for an
// identical config.
//
// Required: topic, defaultTopic, readQueueNums, writeQueueNums, perm,
// topicFilterType and order.
type CreateTopicRequestHeader struct {
	Topic           string          // topic (required)
	DefaultTopic    string          // defaultTopic (required; ignored for creation, the Go admin sends "defaultTopic")
	ReadQueueNums   int32           // readQueueNums (required)
	WriteQueueNums  int32           // writeQueueNums (required)
	Perm            int32           // perm (required): Perm* bits
	TopicFilterType TopicFilterType // topicFilterType (required): SINGLE_TAG or MULTI_TAG
	TopicSysFlag    int32           // topicSysFlag: TopicSysFlag* bits
	Order           bool            // order (required): ordered topic marker
	Attributes      string          // attributes (Java 5.x): "+key=value,…"
	Force           bool            // force (Java 5.x)
}

// EncodeExt implements Header. order is always written, like the clients do.
func (h *CreateTopicRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, extTopic, h.Topic)
	setStr(ext, createDefaultTopic, h.DefaultTopic)
	setInt32(ext, createReadQueueNums, h.ReadQueueNums)
	setInt32(ext, createWriteQueueNums, h.WriteQueueNums)
	setInt32(ext, createPerm, h.Perm)
	setStr(ext, createTopicFilterType, string(h.TopicFilterType))
	putInt32(ext, createTopicSysFlag, h.TopicSysFlag)
	setBool(ext, createOrder, h.Order)
	putStr(ext, createAttributes, h.Attributes)
	putBool(ext, createForce, h.Force)
}

// DecodeExt implements Header.
func (h *CreateTopicRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = CreateTopicRequestHeader{
		Topic:           r.str(extTopic, true),
		DefaultTopic:    r.str(createDefaultTopic, true),
		ReadQueueNums:   r.int32(createReadQueueNums, true),
		WriteQueueNums:  r.int32(createWriteQueueNums, true),
		Perm:            r.int32(createPerm, true),
		TopicFilterType: TopicFilterType(r.str(createTopicFilterType, true)),
		TopicSysFlag:    r.int32(createTopicSysFlag, false),
		Order:           r.boolean(createOrder, true),
		Attributes:      r.str(createAttributes, false),
		Force:           r.boolean(createForce, false),
	}
	return r.err
}

// TopicConfig returns the topic config the request describes; an empty
// TopicFilterType becomes SingleTag. Attributes are not parsed.
func (h *CreateTopicRequestHeader) TopicConfig() TopicConfig {
	ft := h.TopicFilterType
	if ft == "" {
		ft = SingleTag
	}
	return TopicConfig{
		TopicName:       h.Topic,
		ReadQueueNums:   h.ReadQueueNums,
		WriteQueueNums:  h.WriteQueueNums,
		Perm:            h.Perm,
		TopicFilterType: ft,
		TopicSysFlag:    h.TopicSysFlag,
		Order:           h.Order,
	}
}

// DeleteTopicRequestHeader is the header of DELETE_TOPIC_IN_BROKER (215). No
// body. The broker removes the topic's config, consume queues and consumer
// offsets, re-registers with the name servers and answers SUCCESS, or
// INVALID_PARAMETER for a blank or system topic.
//
// Required: topic.
type DeleteTopicRequestHeader struct {
	Topic string // topic (required)
}

// EncodeExt implements Header.
func (h *DeleteTopicRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeOneStr(ext, extTopic, h.Topic)
}

// DecodeExt implements Header.
func (h *DeleteTopicRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.Topic, err = decodeOneStr(ext, extTopic)
	return err
}

// GetBrokerConfigResponseHeader is the response header of GET_BROKER_CONFIG
// (26), whose body is the broker's configuration in the properties text
// format ([EncodeConfigProperties]). The request has no header.
//
// Required: version, the configuration's [DataVersion] as JSON.
type GetBrokerConfigResponseHeader struct {
	Version string // version (required): DataVersion JSON, e.g. {"counter":2,"stateVersion":0,"timestamp":…}
}

// EncodeExt implements Header.
func (h *GetBrokerConfigResponseHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, brokerConfigVersion, h.Version)
}

// DecodeExt implements Header.
func (h *GetBrokerConfigResponseHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.Version, err = decodeOneStr(ext, brokerConfigVersion)
	return err
}

// DataVersion decodes Version. Errors wrap ErrBadBody.
func (h *GetBrokerConfigResponseHeader) DataVersion() (DataVersion, error) {
	var dv DataVersion
	err := decodeJSON("broker config version", []byte(h.Version), &dv)
	return dv, err
}

// SetDataVersion sets Version to dv as compact JSON.
func (h *GetBrokerConfigResponseHeader) SetDataVersion(dv DataVersion) {
	b, _ := marshalBody("broker config version", dv) // a struct of integers always marshals
	h.Version = string(b)
}

// GetTopicStatsInfoRequestHeader is the header of GET_TOPIC_STATS_INFO (202).
// No body. The broker answers SUCCESS with a [TopicStatsTable] of every
// queue of the topic, or TOPIC_NOT_EXIST.
//
// Required: topic.
type GetTopicStatsInfoRequestHeader struct {
	Topic string // topic (required)
}

// EncodeExt implements Header.
func (h *GetTopicStatsInfoRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeOneStr(ext, extTopic, h.Topic)
}

// DecodeExt implements Header.
func (h *GetTopicStatsInfoRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.Topic, err = decodeOneStr(ext, extTopic)
	return err
}

// GetConsumeStatsRequestHeader is the header of GET_CONSUME_STATS (208). No
// body. The broker answers SUCCESS with [ConsumeStats] for the group's
// queues of Topic, or of every topic the group holds offsets for when Topic
// is empty (Java 5.x: of the ';'-separated TopicList).
//
// Required: consumerGroup.
type GetConsumeStatsRequestHeader struct {
	ConsumerGroup string // consumerGroup (required)
	Topic         string // topic: empty means every topic with offsets of the group
	TopicList     string // topicList (Java 5.x): topics separated by ';'
}

// EncodeExt implements Header.
func (h *GetConsumeStatsRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, extConsumerGroup, h.ConsumerGroup)
	putStr(ext, extTopic, h.Topic)
	putStr(ext, statsTopicList, h.TopicList)
}

// DecodeExt implements Header.
func (h *GetConsumeStatsRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = GetConsumeStatsRequestHeader{
		ConsumerGroup: r.str(extConsumerGroup, true),
		Topic:         r.str(extTopic, false),
		TopicList:     r.str(statsTopicList, false),
	}
	return r.err
}

// Topics returns TopicList split at ';' with empty names dropped, or nil.
func (h *GetConsumeStatsRequestHeader) Topics() []string {
	var out []string
	for t := range strings.SplitSeq(h.TopicList, ";") {
		if t != "" {
			out = append(out, t)
		}
	}
	return out
}

// GetConsumerConnectionListRequestHeader is the header of
// GET_CONSUMER_CONNECTION_LIST (203). No body. The broker answers SUCCESS
// with a [ConsumerConnection], or CONSUMER_NOT_ONLINE when the group has no
// live connection.
//
// Required: consumerGroup.
type GetConsumerConnectionListRequestHeader struct {
	ConsumerGroup string // consumerGroup (required)
}

// EncodeExt implements Header.
func (h *GetConsumerConnectionListRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeOneStr(ext, extConsumerGroup, h.ConsumerGroup)
}

// DecodeExt implements Header.
func (h *GetConsumerConnectionListRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.ConsumerGroup, err = decodeOneStr(ext, extConsumerGroup)
	return err
}

// GetProducerConnectionListRequestHeader is the header of
// GET_PRODUCER_CONNECTION_LIST (204). No body. The broker answers SUCCESS
// with a [ProducerConnection], or SYSTEM_ERROR when the group has no live
// connection.
//
// Required: producerGroup.
type GetProducerConnectionListRequestHeader struct {
	ProducerGroup string // producerGroup (required)
}

// EncodeExt implements Header.
func (h *GetProducerConnectionListRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeOneStr(ext, producerGroupKey, h.ProducerGroup)
}

// DecodeExt implements Header.
func (h *GetProducerConnectionListRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.ProducerGroup, err = decodeOneStr(ext, producerGroupKey)
	return err
}

// DeleteSubscriptionGroupRequestHeader is the header of
// DELETE_SUBSCRIPTIONGROUP (207). No body. The broker deletes the group's
// subscription config (and, with CleanOffset, its consumer offsets) and
// answers SUCCESS.
//
// Required: groupName. RocketMQ 4.x names the offset flag removeOffset and
// 5.x cleanOffset: decoding accepts either (true if either is true) and
// encoding writes both when CleanOffset is set.
type DeleteSubscriptionGroupRequestHeader struct {
	GroupName   string // groupName (required)
	CleanOffset bool   // cleanOffset (5.x) / removeOffset (4.x): also delete the group's offsets
}

// EncodeExt implements Header.
func (h *DeleteSubscriptionGroupRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, groupNameKey, h.GroupName)
	putBool(ext, cleanOffsetKey, h.CleanOffset)
	putBool(ext, removeOffsetKey, h.CleanOffset)
}

// DecodeExt implements Header.
func (h *DeleteSubscriptionGroupRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	name := r.str(groupNameKey, true)
	clean := r.boolean(cleanOffsetKey, false)
	remove := r.boolean(removeOffsetKey, false)
	*h = DeleteSubscriptionGroupRequestHeader{GroupName: name, CleanOffset: clean || remove}
	return r.err
}

// QueryTopicConsumeByWhoRequestHeader is the header of
// QUERY_TOPIC_CONSUME_BY_WHO (300). No body. The broker answers SUCCESS with
// a [GroupList] of the groups that subscribe to the topic or hold offsets
// for it.
//
// Required: topic.
type QueryTopicConsumeByWhoRequestHeader struct {
	Topic string // topic (required)
}

// EncodeExt implements Header.
func (h *QueryTopicConsumeByWhoRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeOneStr(ext, extTopic, h.Topic)
}

// DecodeExt implements Header.
func (h *QueryTopicConsumeByWhoRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.Topic, err = decodeOneStr(ext, extTopic)
	return err
}
