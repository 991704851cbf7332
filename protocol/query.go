package protocol

import "github.com/ferrymq/ferry/remoting"

// Message lookup headers: QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33).

// Keys of the lookup headers.
const (
	queryKey                      = "key"
	queryMaxNum                   = "maxNum"
	queryBeginTimestamp           = "beginTimestamp"
	queryEndTimestamp             = "endTimestamp"
	queryUniqueKeyFlag            = "_UNIQUE_KEY_QUERY" // Java MixAll.UNIQUE_MSG_QUERY_FLAG
	queryIndexLastUpdateTimestamp = "indexLastUpdateTimestamp"
	queryIndexLastUpdatePhyoffset = "indexLastUpdatePhyoffset"
	viewOffset                    = "offset"
)

// QueryMessageRequestHeader is the header of QUERY_MESSAGE (12). No body.
//
// The broker looks the hash index up for "<Topic>#<Key>" (index entries
// exist for every KEYS word and for UNIQ_KEY), keeps records stored within
// [BeginTimestamp, EndTimestamp], returns at most min(MaxNum, 64) of them
// (its own default of 32 for a UNIQ_KEY query) and answers SUCCESS with a
// [QueryMessageResponseHeader] and the records laid end to end, or
// QUERY_NOT_FOUND. Hash collisions are possible: callers re-check topic and
// key.
//
// Required: topic, key, maxNum, beginTimestamp and endTimestamp.
// UniqueKeyQuery is carried by the ext key "_UNIQUE_KEY_QUERY", which Java
// adds outside its header class; it is written only when true.
type QueryMessageRequestHeader struct {
	Topic          string // topic (required)
	Key            string // key (required): a KEYS word, or the UNIQ_KEY when UniqueKeyQuery
	MaxNum         int32  // maxNum (required)
	BeginTimestamp int64  // beginTimestamp (required): store time lower bound, ms
	EndTimestamp   int64  // endTimestamp (required): store time upper bound, ms
	UniqueKeyQuery bool   // _UNIQUE_KEY_QUERY: Key is a UNIQ_KEY
}

// EncodeExt implements Header.
func (h *QueryMessageRequestHeader) EncodeExt(ext *remoting.Ext) {
	setStr(ext, extTopic, h.Topic)
	setStr(ext, queryKey, h.Key)
	setInt32(ext, queryMaxNum, h.MaxNum)
	setInt64(ext, queryBeginTimestamp, h.BeginTimestamp)
	setInt64(ext, queryEndTimestamp, h.EndTimestamp)
	putBool(ext, queryUniqueKeyFlag, h.UniqueKeyQuery)
}

// DecodeExt implements Header.
func (h *QueryMessageRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = QueryMessageRequestHeader{
		Topic:          r.str(extTopic, true),
		Key:            r.str(queryKey, true),
		MaxNum:         r.int32(queryMaxNum, true),
		BeginTimestamp: r.int64(queryBeginTimestamp, true),
		EndTimestamp:   r.int64(queryEndTimestamp, true),
		UniqueKeyQuery: r.boolean(queryUniqueKeyFlag, false),
	}
	return r.err
}

// QueryMessageResponseHeader is the response header of a successful
// QUERY_MESSAGE (12). Both fields are required by Java clients.
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64 // indexLastUpdateTimestamp (required): ms
	IndexLastUpdatePhyoffset int64 // indexLastUpdatePhyoffset (required): commit-log offset indexed so far
}

// EncodeExt implements Header.
func (h *QueryMessageResponseHeader) EncodeExt(ext *remoting.Ext) {
	setInt64(ext, queryIndexLastUpdateTimestamp, h.IndexLastUpdateTimestamp)
	setInt64(ext, queryIndexLastUpdatePhyoffset, h.IndexLastUpdatePhyoffset)
}

// DecodeExt implements Header.
func (h *QueryMessageResponseHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = QueryMessageResponseHeader{
		IndexLastUpdateTimestamp: r.int64(queryIndexLastUpdateTimestamp, true),
		IndexLastUpdatePhyoffset: r.int64(queryIndexLastUpdatePhyoffset, true),
	}
	return r.err
}

// ViewMessageRequestHeader is the header of VIEW_MESSAGE_BY_ID (33). No
// body. The broker answers SUCCESS with the single record stored at commit-log
// offset Offset, or SYSTEM_ERROR. Java clients send it to the store address
// embedded in the offset message id.
//
// Required: offset.
type ViewMessageRequestHeader struct {
	Offset int64  // offset (required): commit-log offset of the record
	Topic  string // topic (Java 5.x)
}

// EncodeExt implements Header.
func (h *ViewMessageRequestHeader) EncodeExt(ext *remoting.Ext) {
	setInt64(ext, viewOffset, h.Offset)
	putStr(ext, extTopic, h.Topic)
}

// DecodeExt implements Header.
func (h *ViewMessageRequestHeader) DecodeExt(ext remoting.Ext) error {
	r := extReader{ext: ext}
	*h = ViewMessageRequestHeader{
		Offset: r.int64(viewOffset, true),
		Topic:  r.str(extTopic, false),
	}
	return r.err
}
