package protocol

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
func (h *GetRouteInfoRequestHeader) EncodeExt(ext map[string]string) {
	ext[extTopic] = h.Topic
	if h.AcceptStandardJSONOnly {
		ext[extAcceptStandardJSONOnly] = "true"
	}
}

// DecodeExt implements Header.
func (h *GetRouteInfoRequestHeader) DecodeExt(ext map[string]string) error {
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
}

// EncodeExt implements Header. Like Java, it always writes compressed and
// bodyCrc32.
func (h *RegisterBrokerRequestHeader) EncodeExt(ext map[string]string) {
	ext[regBrokerName] = h.BrokerName
	ext[regBrokerAddr] = h.BrokerAddr
	ext[regClusterName] = h.ClusterName
	ext[regHAServerAddr] = h.HAServerAddr
	ext[regBrokerID] = fmtInt64(h.BrokerID)
	if h.HeartbeatTimeoutMillis != 0 {
		ext[regHeartbeatTimeoutMillis] = fmtInt64(h.HeartbeatTimeoutMillis)
	}
	if h.EnableActingMaster {
		ext[regEnableActingMaster] = "true"
	}
	ext[regCompressed] = fmtBool(h.Compressed)
	ext[regBodyCrc32] = fmtInt32(h.BodyCrc32)
	putStr(ext, regZoneName, h.ZoneName)
}

// DecodeExt implements Header.
func (h *RegisterBrokerRequestHeader) DecodeExt(ext map[string]string) error {
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
	}
	return r.err
}

// RegisterBrokerResponseHeader is the response header of REGISTER_BROKER
// (103). Both fields are optional and written only when non-empty: a Java
// slave treats any present value (even "") as the master's address.
type RegisterBrokerResponseHeader struct {
	HAServerAddr string // haServerAddr: the master's HA address
	MasterAddr   string // masterAddr: set for a slave whose master is alive
}

// EncodeExt implements Header.
func (h *RegisterBrokerResponseHeader) EncodeExt(ext map[string]string) {
	putStr(ext, regHAServerAddr, h.HAServerAddr)
	putStr(ext, regMasterAddr, h.MasterAddr)
}

// DecodeExt implements Header.
func (h *RegisterBrokerResponseHeader) DecodeExt(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = RegisterBrokerResponseHeader{
		HAServerAddr: r.str(regHAServerAddr, false),
		MasterAddr:   r.str(regMasterAddr, false),
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
func (h *UnregisterBrokerRequestHeader) EncodeExt(ext map[string]string) {
	ext[regBrokerName] = h.BrokerName
	ext[regBrokerAddr] = h.BrokerAddr
	ext[regClusterName] = h.ClusterName
	ext[regBrokerID] = fmtInt64(h.BrokerID)
}

// DecodeExt implements Header.
func (h *UnregisterBrokerRequestHeader) DecodeExt(ext map[string]string) error {
	r := extReader{ext: ext}
	*h = UnregisterBrokerRequestHeader{
		BrokerName:  r.str(regBrokerName, true),
		BrokerAddr:  r.str(regBrokerAddr, true),
		ClusterName: r.str(regClusterName, true),
		BrokerID:    r.int64(regBrokerID, true),
	}
	return r.err
}
