package protocol

import (
	"encoding/json"
	"fmt"
)

// TopicFilterType is how a topic's messages carry tags.
type TopicFilterType string

// Topic filter types. An empty value means SingleTag.
const (
	SingleTag TopicFilterType = "SINGLE_TAG" // one tag per message
	MultiTag  TopicFilterType = "MULTI_TAG"  // several tags; stored records get sysFlag 0x2
)

// TopicConfig is a broker's configuration of one topic, as carried in
// REGISTER_BROKER bodies and broker topic tables (JSON field names as Java).
type TopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
	Perm            int32             `json:"perm"` // Perm* bits
	TopicFilterType TopicFilterType   `json:"topicFilterType"`
	TopicSysFlag    int32             `json:"topicSysFlag"` // TopicSysFlag* bits
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes"` // Java 5.x; written as {} when empty
}

// MarshalJSON writes attributes as {} when empty (Java expects a map).
func (t TopicConfig) MarshalJSON() ([]byte, error) {
	type plain TopicConfig
	p := plain(t)
	if p.Attributes == nil {
		p.Attributes = map[string]string{}
	}
	return json.Marshal(p)
}

// QueueData returns the route entry a name server derives from t for
// brokerName.
func (t *TopicConfig) QueueData(brokerName string) QueueData {
	return QueueData{
		BrokerName:     brokerName,
		ReadQueueNums:  t.ReadQueueNums,
		WriteQueueNums: t.WriteQueueNums,
		Perm:           t.Perm,
		TopicSysFlag:   t.TopicSysFlag,
	}
}

// DataVersion versions a broker's topic table; the name server rebuilds a
// master's queue data only when it changes.
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"` // ms
	Counter      int64 `json:"counter"`
}

// TopicConfigSerializeWrapper is a broker's topic table with its version.
type TopicConfigSerializeWrapper struct {
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"` // topic name → config
	DataVersion      DataVersion            `json:"dataVersion"`
}

// MarshalJSON writes topicConfigTable as {} when empty and adds the empty
// 5.x topicQueueMappingInfoMap.
func (w TopicConfigSerializeWrapper) MarshalJSON() ([]byte, error) {
	table := w.TopicConfigTable
	if table == nil {
		table = map[string]TopicConfig{}
	}
	return json.Marshal(struct {
		DataVersion              DataVersion            `json:"dataVersion"`
		TopicConfigTable         map[string]TopicConfig `json:"topicConfigTable"`
		TopicQueueMappingInfoMap struct{}               `json:"topicQueueMappingInfoMap"`
	}{DataVersion: w.DataVersion, TopicConfigTable: table})
}

// RegisterBrokerBody is the uncompressed JSON body of REGISTER_BROKER (103):
//
//	{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{…},
//	 "topicConfigTable":{"TopicA":{…}},"topicQueueMappingInfoMap":{}}}
//
// Java's compressed variant (header compressed=true) is not handled here.
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string                    `json:"filterServerList"`
}

// MarshalJSON writes filterServerList as [] when empty.
func (r RegisterBrokerBody) MarshalJSON() ([]byte, error) {
	list := r.FilterServerList
	if list == nil {
		list = []string{}
	}
	return json.Marshal(struct {
		FilterServerList            []string                    `json:"filterServerList"`
		TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	}{list, r.TopicConfigSerializeWrapper})
}

// EncodeRegisterBrokerBody encodes r as compact JSON (map keys sorted).
func EncodeRegisterBrokerBody(r *RegisterBrokerBody) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("%w: register broker body: %w", ErrBadBody, err)
	}
	return b, nil
}

// DecodeRegisterBrokerBody decodes an uncompressed REGISTER_BROKER body as
// sent by Ferry or Java brokers (fastjson bare integer keys in 5.x mapping
// tables are tolerated and ignored). Empty lists and maps decode as nil.
// Errors wrap ErrBadBody.
func DecodeRegisterBrokerBody(data []byte) (*RegisterBrokerBody, error) {
	var r RegisterBrokerBody
	if err := decodeJSON("register broker body", data, &r); err != nil {
		return nil, err
	}
	w := &r.TopicConfigSerializeWrapper
	w.TopicConfigTable = nilMapIfEmpty(w.TopicConfigTable)
	for name, tc := range w.TopicConfigTable {
		tc.Attributes = nilMapIfEmpty(tc.Attributes)
		w.TopicConfigTable[name] = tc
	}
	r.FilterServerList = nilIfEmpty(r.FilterServerList)
	return &r, nil
}
