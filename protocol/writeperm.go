package protocol

import "github.com/ferrymq/ferry/remoting"

// Broker drain headers: WIPE_WRITE_PERM_OF_BROKER (205) and ADD_WRITE_PERM_OF_BROKER
// (327), sent by tools to a name server. No bodies.
//
//	request:  brokerName (required) — the broker group
//	response: wipeTopicCount (205) or addTopicCount (327) — the number of topics
//	          whose queue data of that broker group the request changed (both
//	          required in RocketMQ; always written)

// Keys of the broker drain headers.
const (
	permBrokerName     = "brokerName"
	permWipeTopicCount = "wipeTopicCount"
	permAddTopicCount  = "addTopicCount"
)

// BrokerWritePermRequestHeader is the header of WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327): RocketMQ's WipeWritePermOfBrokerRequestHeader and
// AddWritePermOfBrokerRequestHeader, which have the same single field.
//
// Required: brokerName.
type BrokerWritePermRequestHeader struct {
	BrokerName string // brokerName (required)
}

// EncodeExt implements Header.
func (h *BrokerWritePermRequestHeader) EncodeExt(ext *remoting.Ext) {
	encodeOneStr(ext, permBrokerName, h.BrokerName)
}

// DecodeExt implements Header.
func (h *BrokerWritePermRequestHeader) DecodeExt(ext remoting.Ext) (err error) {
	h.BrokerName, err = decodeOneStr(ext, permBrokerName)
	return err
}

// WipeWritePermOfBrokerResponseHeader is the response header of a successful
// WIPE_WRITE_PERM_OF_BROKER (205).
//
// Required: wipeTopicCount.
type WipeWritePermOfBrokerResponseHeader struct {
	WipeTopicCount int32 // wipeTopicCount (required)
}

// EncodeExt implements Header.
func (h *WipeWritePermOfBrokerResponseHeader) EncodeExt(ext *remoting.Ext) {
	setInt32(ext, permWipeTopicCount, h.WipeTopicCount)
}

// DecodeExt implements Header.
func (h *WipeWritePermOfBrokerResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	h.WipeTopicCount = r.int32(permWipeTopicCount, true)
	return r.err
}

// AddWritePermOfBrokerResponseHeader is the response header of a successful
// ADD_WRITE_PERM_OF_BROKER (327).
//
// Required: addTopicCount.
type AddWritePermOfBrokerResponseHeader struct {
	AddTopicCount int32 // addTopicCount (required)
}

// EncodeExt implements Header.
func (h *AddWritePermOfBrokerResponseHeader) EncodeExt(ext *remoting.Ext) {
	setInt32(ext, permAddTopicCount, h.AddTopicCount)
}

// DecodeExt implements Header.
func (h *AddWritePermOfBrokerResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	h.AddTopicCount = r.int32(permAddTopicCount, true)
	return r.err
}
