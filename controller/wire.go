package controller

import (
	"fmt"
	"strconv"

	"github.com/ferrymq/ferry/remoting"
)

// The controller's requests are remoting commands; scalars travel as ext fields, views as
// JSON bodies (view.go). Every field is a decimal integer or a plain string.
//
//	CONTROLLER_REGISTER_BROKER (1003), BROKER_HEARTBEAT (904)      Raft leader
//	  request  clusterName, brokerName, brokerAddr, haAddr, brokerId (0: assign one),
//	           epoch, maxOffset, restartEpoch (optional, registrations only: the
//	           newest epoch in the epoch file of a broker that has just started)
//	  response brokerId (the broker's id), body GroupView
//	CONTROLLER_ALTER_SYNC_STATE_SET (1001)                          Raft leader
//	  request  brokerName, masterBrokerId, masterEpoch, syncStateSetEpoch,
//	           body {"syncStateSet":[ids]}
//	  response body GroupView
//	CONTROLLER_ELECT_MASTER (1002)                                  Raft leader
//	  request  brokerName, brokerId (the broker to elect; 0: the policy chooses),
//	           masterEpoch (optional: the epoch the election replaces; absent or 0:
//	           whichever is current)
//	  response body GroupView (after the election)
//	CONTROLLER_GET_REPLICA_INFO (1004)                              any node
//	  request  brokerName
//	  response body GroupView (liveness only from the leader)
//	CONTROLLER_GET_METADATA_INFO (1005)                             any node
//	  response body Status
//
// Every response carries nodeId (the answering node), leaderId (the Raft leader it
// knows, "" when none) and isLeader ("true" or "false"). A refusal has its response code
// (errors.go: RocketMQ 5's CONTROLLER_* codes), the error text as remark and the
// refusal's name in the ext field "error". A write sent to a follower is answered
// CONTROLLER_NOT_LEADER (2007) with leaderId: the client learns which of its addresses
// is which node from nodeId and goes to the leader, or tries the next address. Nothing
// is forwarded between controller nodes.
const (
	fieldCluster     = "clusterName"
	fieldGroup       = "brokerName"
	fieldAddr        = "brokerAddr"
	fieldHAAddr      = "haAddr"
	fieldBrokerID    = "brokerId"
	fieldEpoch       = "epoch"
	fieldMaxOffset   = "maxOffset"
	fieldRestart     = "restartEpoch"
	fieldMasterID    = "masterBrokerId"
	fieldMasterEpoch = "masterEpoch"
	fieldSetEpoch    = "syncStateSetEpoch"
	fieldNodeID      = "nodeId"
	fieldLeaderID    = "leaderId"
	fieldIsLeader    = "isLeader"
	fieldError       = "error"
)

// reportFields writes a BrokerReport into ext fields.
func reportFields(req *remoting.Command, r BrokerReport) {
	req.SetExt(fieldCluster, r.Cluster)
	req.SetExt(fieldGroup, r.Group)
	req.SetExt(fieldAddr, r.Addr)
	req.SetExt(fieldHAAddr, r.HAAddr)
	req.SetExt(fieldBrokerID, strconv.FormatInt(r.BrokerID, 10))
	req.SetExt(fieldEpoch, strconv.FormatInt(int64(r.Epoch), 10))
	req.SetExt(fieldMaxOffset, strconv.FormatInt(r.MaxOffset, 10))
	if r.RestartEpoch != 0 {
		req.SetExt(fieldRestart, strconv.FormatInt(int64(r.RestartEpoch), 10))
	}
}

// fieldReader reads ext fields; the first error sticks and wraps ErrBadRequest.
type fieldReader struct {
	req *remoting.Command
	err error
}

func (f *fieldReader) fail(format string, args ...any) {
	if f.err == nil {
		f.err = fmt.Errorf("%w: "+format, append([]any{ErrBadRequest}, args...)...)
	}
}

// str returns a required, non-empty string field.
func (f *fieldReader) str(key string) string {
	v := f.req.Ext(key)
	if v == "" {
		f.fail("field %s missing", key)
	}
	if len(v) > maxString {
		f.fail("field %s over %d bytes", key, maxString)
	}
	return v
}

// optStr returns an optional string field.
func (f *fieldReader) optStr(key string) string {
	v := f.req.Ext(key)
	if len(v) > maxString {
		f.fail("field %s over %d bytes", key, maxString)
	}
	return v
}

// int returns a required integer field of bits bits that is not negative.
func (f *fieldReader) int(key string, bits int) int64 {
	v := f.req.Ext(key)
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil || n < 0 {
		f.fail("field %s: %q is not a number ≥ 0", key, v)
		return 0
	}
	return n
}

// optInt returns an optional integer field of bits bits that is not negative; 0 when
// absent.
func (f *fieldReader) optInt(key string, bits int) int64 {
	if f.req.Ext(key) == "" {
		return 0
	}
	return f.int(key, bits)
}

// report reads a BrokerReport.
func (f *fieldReader) report() BrokerReport {
	return BrokerReport{
		Cluster:   f.optStr(fieldCluster),
		Group:     f.str(fieldGroup),
		Addr:      f.str(fieldAddr),
		HAAddr:    f.optStr(fieldHAAddr),
		BrokerID:  f.int(fieldBrokerID, 64),
		Epoch:     int32(f.int(fieldEpoch, 32)),
		MaxOffset: f.int(fieldMaxOffset, 64),

		RestartEpoch: int32(f.optInt(fieldRestart, 32)),
	}
}
