package protocol

import (
	"fmt"
)

// BrokerEpochCache is the body of a GET_BROKER_EPOCH_CACHE (1007) answer (RocketMQ 5's
// EpochEntryCache, controller mode): the broker's epoch history, oldest first, and its
// commit log's end. The request has no ext fields and no body.
//
//	{"clusterName":"DefaultCluster","brokerName":"broker-a","brokerId":1,
//	 "epochList":[{"epoch":1,"startOffset":0,"endOffset":4096},
//	              {"epoch":3,"startOffset":4096,"endOffset":9000}],
//	 "maxOffset":9000}
//
// Entry i covers the log from its startOffset to its endOffset, the next entry's
// startOffset (the last one's is maxOffset). brokerId is the id the controller assigned
// the broker (a master's too, though it registers as 0).
type BrokerEpochCache struct {
	ClusterName string       `json:"clusterName"`
	BrokerName  string       `json:"brokerName"`
	BrokerID    int64        `json:"brokerId"`
	EpochList   []EpochEntry `json:"epochList"`
	MaxOffset   int64        `json:"maxOffset"`
}

// EpochEntry is one entry of a [BrokerEpochCache]: the log from StartOffset to EndOffset
// was written by the master of Epoch.
type EpochEntry struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"startOffset"`
	EndOffset   int64 `json:"endOffset"`
}

// EncodeBrokerEpochCache encodes c as compact JSON (an empty list as []). It refuses
// (ErrBadBody) a history that is not consistent: see DecodeBrokerEpochCache.
func EncodeBrokerEpochCache(c *BrokerEpochCache) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	out := *c
	if out.EpochList == nil {
		out.EpochList = []EpochEntry{}
	}
	return marshalBody("broker epoch cache", out)
}

// DecodeBrokerEpochCache decodes a GET_BROKER_EPOCH_CACHE body. The history must be
// consistent: epochs ascending and positive, offsets not negative, each entry starting
// where the previous one ends and ending no earlier than it starts, and none past
// maxOffset. An empty list decodes as nil. Errors wrap ErrBadBody.
func DecodeBrokerEpochCache(data []byte) (*BrokerEpochCache, error) {
	var c BrokerEpochCache
	if err := decodeJSON("broker epoch cache", data, &c); err != nil {
		return nil, err
	}
	if len(c.EpochList) == 0 {
		c.EpochList = nil
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	return &c, nil
}

// check reports an inconsistent history (see DecodeBrokerEpochCache).
func (c *BrokerEpochCache) check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: broker epoch cache: %s", ErrBadBody, fmt.Sprintf(format, args...))
	}
	if c.MaxOffset < 0 {
		return bad("maxOffset %d is negative", c.MaxOffset)
	}
	for i, e := range c.EpochList {
		switch {
		case e.Epoch < 1:
			return bad("entry %d: epoch %d is not positive", i, e.Epoch)
		case e.StartOffset < 0 || e.EndOffset < e.StartOffset || e.EndOffset > c.MaxOffset:
			return bad("entry %d: [%d, %d) is not within [0, maxOffset %d]", i, e.StartOffset, e.EndOffset, c.MaxOffset)
		case i > 0 && e.Epoch <= c.EpochList[i-1].Epoch:
			return bad("entry %d: epoch %d does not follow epoch %d", i, e.Epoch, c.EpochList[i-1].Epoch)
		case i > 0 && e.StartOffset != c.EpochList[i-1].EndOffset:
			return bad("entry %d starts at %d, the previous one ends at %d", i, e.StartOffset, c.EpochList[i-1].EndOffset)
		}
	}
	return nil
}
