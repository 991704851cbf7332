package protocol

import "github.com/ferrymq/ferry/remoting"

// GetRouteInfoRequestHeader is the header of GET_ROUTEINFO_BY_TOPIC (105).
// The name server answers SUCCESS with a [TopicRouteData] body, or
// TOPIC_NOT_EXIST when it has no queue or broker data for the topic.
type GetRouteInfoRequestHeader struct {
	Topic string // topic (required)
	// AcceptStandardJSONOnly is Java 5.x acceptStandardJsonOnly. Ferry always
	// answers standard JSON, so it is informational.
	AcceptStandardJSONOnly bool
}

const extAcceptStandardJSONOnly = "acceptStandardJsonOnly"

// EncodeExt implements Header.
func (h *GetRouteInfoRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(extTopic, h.Topic)
	if h.AcceptStandardJSONOnly {
		ext.Set(extAcceptStandardJSONOnly, "true")
	}
}

// DecodeExt implements Header.
func (h *GetRouteInfoRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = GetRouteInfoRequestHeader{
		Topic:                  r.str(extTopic, true),
		AcceptStandardJSONOnly: r.boolean(extAcceptStandardJSONOnly, false),
	}
	return r.err
}

// Keys of the broker registration headers.
const (
	regBrokerName             = "brokerName"
	regBrokerAddr             = "brokerAddr"
	regClusterName            = "clusterName"
	regHAServerAddr           = "haServerAddr"
	regBrokerID               = "brokerId"
	regHeartbeatTimeoutMillis = "heartbeatTimeoutMillis"
	regEnableActingMaster     = "enableActingMaster"
	regCompressed             = "compressed"
	regBodyCrc32              = "bodyCrc32"
	regZoneName               = "__ZONE_NAME"
	regMasterAddr             = "masterAddr"
	regMasterEpoch            = "ferryMasterEpoch"
)

// RegisterBrokerRequestHeader is the header of REGISTER_BROKER (103), sent by
// a broker to every name server at start-up and every 30 s. The body is a
// [RegisterBrokerBody] (JSON, or Java's compressed form when Compressed).
// The name server records the broker address under (cluster, broker name,
// broker id), refreshes its liveness, and — for a master whose data version
// changed — rebuilds the topics' queue data. It answers SUCCESS with a
// [RegisterBrokerResponseHeader].
type RegisterBrokerRequestHeader struct {
	BrokerName   string // brokerName (required)
	BrokerAddr   string // brokerAddr (required): "ip:port" clients dial
	ClusterName  string // clusterName (required)
	HAServerAddr string // haServerAddr (required)
	BrokerID     int64  // brokerId (required): 0 = master
	// HeartbeatTimeoutMillis is the liveness timeout; 0 (absent) means the
	// name server default of 120 s.
	HeartbeatTimeoutMillis int64
	EnableActingMaster     bool   // enableActingMaster
	Compressed             bool   // compressed: body uses Java's compressed form
	BodyCrc32              int32  // bodyCrc32: masked CRC-32 of the body; 0 = don't check
	ZoneName               string // __ZONE_NAME
	// MasterEpoch (ferryMasterEpoch, Ferry's; written only when positive) is the master
	// epoch of a broker in controller mode: a registration with a higher epoch takes over
	// the name, id and address bindings of one with a lower epoch, and one with a lower
	// epoch than the binding it meets is refused. 0: a fixed-role broker.
	MasterEpoch int32
}

// EncodeExt implements Header. Like Java, it always writes compressed and
// bodyCrc32.
func (h *RegisterBrokerRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(regBrokerName, h.BrokerName)
	ext.Set(regBrokerAddr, h.BrokerAddr)
	ext.Set(regClusterName, h.ClusterName)
	ext.Set(regHAServerAddr, h.HAServerAddr)
	ext.Set(regBrokerID, fmtInt64(h.BrokerID))
	if h.HeartbeatTimeoutMillis != 0 {
		ext.Set(regHeartbeatTimeoutMillis, fmtInt64(h.HeartbeatTimeoutMillis))
	}
	if h.EnableActingMaster {
		ext.Set(regEnableActingMaster, "true")
	}
	ext.Set(regCompressed, fmtBool(h.Compressed))
	ext.Set(regBodyCrc32, fmtInt32(h.BodyCrc32))
	putStr(ext, regZoneName, h.ZoneName)
	if h.MasterEpoch > 0 {
		ext.Set(regMasterEpoch, fmtInt32(h.MasterEpoch))
	}
}

// DecodeExt implements Header.
func (h *RegisterBrokerRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = RegisterBrokerRequestHeader{
		BrokerName:             r.str(regBrokerName, true),
		BrokerAddr:             r.str(regBrokerAddr, true),
		ClusterName:            r.str(regClusterName, true),
		HAServerAddr:           r.str(regHAServerAddr, true),
		BrokerID:               r.int64(regBrokerID, true),
		HeartbeatTimeoutMillis: r.int64(regHeartbeatTimeoutMillis, false),
		EnableActingMaster:     r.boolean(regEnableActingMaster, false),
		Compressed:             r.boolean(regCompressed, false),
		BodyCrc32:              r.int32(regBodyCrc32, false),
		ZoneName:               r.str(regZoneName, false),
		MasterEpoch:            r.int32(regMasterEpoch, false),
	}
	if h.MasterEpoch < 0 { // written only when positive
		r.fail(regMasterEpoch, fmtInt32(h.MasterEpoch), ErrBadField)
	}
	return r.err
}

// RegisterBrokerResponseHeader is the response header of REGISTER_BROKER
// (103). Both fields are optional and written only when non-empty: a Java
// slave treats any present value (even "") as the master's address.
type RegisterBrokerResponseHeader struct {
	HAServerAddr string // haServerAddr: the master's HA address
	MasterAddr   string // masterAddr: set for a slave whose master is alive
	// MasterEpoch (ferryMasterEpoch, Ferry's; written only when positive) is the master
	// epoch of the group's registered master (controller mode). A refusal because the
	// registration's own epoch is stale carries it too (with SYSTEM_ERROR): the broker
	// learns it was replaced.
	MasterEpoch int32
}

// EncodeExt implements Header.
func (h *RegisterBrokerResponseHeader) EncodeExt(ext *remoting.Ext) {
	putStr(ext, regHAServerAddr, h.HAServerAddr)
	putStr(ext, regMasterAddr, h.MasterAddr)
	if h.MasterEpoch > 0 {
		ext.Set(regMasterEpoch, fmtInt32(h.MasterEpoch))
	}
}

// DecodeExt implements Header.
func (h *RegisterBrokerResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = RegisterBrokerResponseHeader{
		HAServerAddr: r.str(regHAServerAddr, false),
		MasterAddr:   r.str(regMasterAddr, false),
		MasterEpoch:  r.int32(regMasterEpoch, false),
	}
	if h.MasterEpoch < 0 { // written only when positive
		r.fail(regMasterEpoch, fmtInt32(h.MasterEpoch), ErrBadField)
	}
	return r.err
}

// UnregisterBrokerRequestHeader is the header of UNREGISTER_BROKER (104),
// sent by a broker on orderly shutdown. The name server removes that address
// as its liveness sweeper would and answers SUCCESS.
type UnregisterBrokerRequestHeader struct {
	BrokerName  string // brokerName (required)
	BrokerAddr  string // brokerAddr (required)
	ClusterName string // clusterName (required)
	BrokerID    int64  // brokerId (required)
}

// EncodeExt implements Header.
func (h *UnregisterBrokerRequestHeader) EncodeExt(ext *remoting.Ext) {
	ext.Set(regBrokerName, h.BrokerName)
	ext.Set(regBrokerAddr, h.BrokerAddr)
	ext.Set(regClusterName, h.ClusterName)
	ext.Set(regBrokerID, fmtInt64(h.BrokerID))
}

// DecodeExt implements Header.
func (h *UnregisterBrokerRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = UnregisterBrokerRequestHeader{
		BrokerName:  r.str(regBrokerName, true),
		BrokerAddr:  r.str(regBrokerAddr, true),
		ClusterName: r.str(regClusterName, true),
		BrokerID:    r.int64(regBrokerID, true),
	}
	return r.err
}

// Name-server admin headers: PUT_KV_CONFIG (100), GET_KV_CONFIG (101),
// DELETE_KV_CONFIG (102), DELETE_TOPIC_IN_NAMESRV (216),
// GET_KVLIST_BY_NAMESPACE (219) and GET_TOPICS_BY_CLUSTER (224).

// Keys of the name-server admin headers.
const (
	nsClusterName = "clusterName"
	nsCluster     = "cluster"
	kvNamespace   = "namespace"
	kvKey         = "key"
	kvValue       = "value"
)

// DeleteTopicFromNamesrvRequestHeader is the header of
// DELETE_TOPIC_IN_NAMESRV (216). No body. The name server removes the
// topic's route (only the queue data of ClusterName's brokers when set) and
// answers SUCCESS. A broker that still has the topic re-adds it on its next
// registration.
//
// Required: topic.
type DeleteTopicFromNamesrvRequestHeader struct {
	Topic       string // topic (required)
	ClusterName string // clusterName: restrict the deletion to one cluster
}

// EncodeExt implements Header.
func (h *DeleteTopicFromNamesrvRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, extTopic, h.Topic)
	putStr(ext, nsClusterName, h.ClusterName)
}

// DecodeExt implements Header.
func (h *DeleteTopicFromNamesrvRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = DeleteTopicFromNamesrvRequestHeader{
		Topic:       r.str(extTopic, true),
		ClusterName: r.str(nsClusterName, false),
	}
	return r.err
}

// GetTopicsByClusterRequestHeader is the header of GET_TOPICS_BY_CLUSTER
// (224). No body. The name server answers SUCCESS with a [TopicList] of the
// topics hosted by the cluster's brokers.
//
// Required: cluster.
type GetTopicsByClusterRequestHeader struct {
	Cluster string // cluster (required)
}

// EncodeExt implements Header.
func (h *GetTopicsByClusterRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeOneStr(ext, nsCluster, h.Cluster)
}

// DecodeExt implements Header.
func (h *GetTopicsByClusterRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.Cluster, err = decodeOneStr(ext, nsCluster)
	return err
}

// PutKVConfigRequestHeader is the header of PUT_KV_CONFIG (100). No body. The
// name server stores Value under (Namespace, Key), persists its KV table and
// answers SUCCESS. The ORDER_TOPIC_CONFIG namespace maps a topic to the
// orderTopicConf of its route.
//
// Required: namespace, key and value.
type PutKVConfigRequestHeader struct {
	Namespace string // namespace (required)
	Key       string // key (required)
	Value     string // value (required)
}

// EncodeExt implements Header.
func (h *PutKVConfigRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, kvNamespace, h.Namespace)
	setStr(ext, kvKey, h.Key)
	setStr(ext, kvValue, h.Value)
}

// DecodeExt implements Header.
func (h *PutKVConfigRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = PutKVConfigRequestHeader{
		Namespace: r.str(kvNamespace, true),
		Key:       r.str(kvKey, true),
		Value:     r.str(kvValue, true),
	}
	return r.err
}

// GetKVConfigRequestHeader is the header of GET_KV_CONFIG (101). No body.
// The name server answers SUCCESS with a [GetKVConfigResponseHeader], or
// QUERY_NOT_FOUND.
//
// Required: namespace and key.
type GetKVConfigRequestHeader struct {
	Namespace string // namespace (required)
	Key       string // key (required)
}

// EncodeExt implements Header.
func (h *GetKVConfigRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeKVKey(ext, h.Namespace, h.Key)
}

// DecodeExt implements Header.
func (h *GetKVConfigRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.Namespace, h.Key, err = decodeKVKey(ext)
	return err
}

// DeleteKVConfigRequestHeader is the header of DELETE_KV_CONFIG (102). No
// body. The name server removes the entry, persists its KV table and
// answers SUCCESS.
//
// Required: namespace and key.
type DeleteKVConfigRequestHeader struct {
	Namespace string // namespace (required)
	Key       string // key (required)
}

// EncodeExt implements Header.
func (h *DeleteKVConfigRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeKVKey(ext, h.Namespace, h.Key)
}

// DecodeExt implements Header.
func (h *DeleteKVConfigRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.Namespace, h.Key, err = decodeKVKey(ext)
	return err
}

func encodeKVKey(ext *remoting.Ext, namespace, key string) {
	setStr(ext, kvNamespace, namespace)
	setStr(ext, kvKey, key)
}

func decodeKVKey(ext remoting.Ext) (namespace, key string, err error) {
	r := extReader{ext: ext}
	namespace = r.str(kvNamespace, true)
	key = r.str(kvKey, true)
	return namespace, key, r.err
}

// GetKVConfigResponseHeader is the response header of a successful
// GET_KV_CONFIG (101). Value is optional on the wire (Java marks it
// nullable); an absent value decodes as "".
type GetKVConfigResponseHeader struct {
	Value string // value
}

// EncodeExt implements Header.
func (h *GetKVConfigResponseHeader) EncodeExt(ext *remoting.Ext) {
	putStr(ext, kvValue, h.Value)
}

// DecodeExt implements Header.
func (h *GetKVConfigResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	h.Value = r.str(kvValue, false)
	return r.err
}

// GetKVListByNamespaceRequestHeader is the header of GET_KVLIST_BY_NAMESPACE
// (219). No body. The name server answers SUCCESS with a [KVTable] of the
// namespace, or QUERY_NOT_FOUND.
//
// Required: namespace.
type GetKVListByNamespaceRequestHeader struct {
	Namespace string // namespace (required)
}

// EncodeExt implements Header.
func (h *GetKVListByNamespaceRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeOneStr(ext, kvNamespace, h.Namespace)
}

// DecodeExt implements Header.
func (h *GetKVListByNamespaceRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.Namespace, err = decodeOneStr(ext, kvNamespace)
	return err
}
