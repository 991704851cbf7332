package controller

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// ErrNoController wraps the error of a call no controller answered before its context
// ended (every address refused, timed out or was not the leader).
var ErrNoController = errors.New("controller: no controller answered")

// ClientOptions configure a Client.
type ClientOptions struct {
	// Addrs are the controllers' remoting addresses (controller.listen of each node).
	Addrs []string
	// TLS, when set, dials TLS; nil: plain TCP.
	TLS *tls.Config
	// Credentials, when set with an access key, sign every request (a controller with
	// ACL on needs an admin account); nil: unsigned.
	Credentials *acl.Credentials
	// Timeout bounds one request to one controller. Default 3 s.
	Timeout time.Duration
	// Logger receives connection errors.
	Logger zerolog.Logger
}

// DefaultClientOptions returns the defaults; Addrs must be set.
func DefaultClientOptions() ClientOptions {
	return ClientOptions{Timeout: 3 * time.Second, Logger: zerolog.Nop()}
}

// Validate checks the options; errors wrap ErrBadOptions.
func (o ClientOptions) Validate() error {
	if len(o.Addrs) == 0 {
		return fmt.Errorf("%w: no controller address", ErrBadOptions)
	}
	for _, a := range o.Addrs {
		if a == "" {
			return fmt.Errorf("%w: empty controller address", ErrBadOptions)
		}
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("%w: timeout %v must be positive", ErrBadOptions, o.Timeout)
	}
	return nil
}

// Client talks to a controller cluster. Writes go to the Raft leader: the client keeps
// its last known leader, follows a CONTROLLER_NOT_LEADER answer to the leader it names
// (learning which address is which node from the answers) or else tries the next
// address, and moves on to another address when one cannot be reached — until the
// call's context ends, or, when it has no deadline, for Timeout per address and twice
// around. Reads prefer the leader too (only its answers carry liveness) and take a
// follower's answer when the leader cannot be reached. A Client is safe for concurrent
// use.
type Client struct {
	opts ClientOptions
	rc   *remoting.Client

	mu     sync.Mutex
	leader int               // index in opts.Addrs of the last known leader
	nodes  map[string]string // address → node id, learned from answers
}

// NewClient returns a client of the controllers at o.Addrs; it connects on first use.
func NewClient(o ClientOptions) (*Client, error) {
	if o.Timeout == 0 {
		o.Timeout = DefaultClientOptions().Timeout
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ro := remoting.DefaultClientOptions()
	ro.DialTimeout, ro.RequestTimeout = o.Timeout, o.Timeout
	ro.TLS, ro.Logger = o.TLS, o.Logger
	rc, err := remoting.NewClient(ro)
	if err != nil {
		return nil, fmt.Errorf("controller: client: %w", err)
	}
	return &Client{opts: o, rc: rc, nodes: make(map[string]string)}, nil
}

// Close closes the client's connections.
func (c *Client) Close() error { return c.rc.Close() }

// Register registers the broker (assigning an id when BrokerID is NoBroker; a broker
// keeps its id in its data dir and sends it on later starts) and returns the id and the
// group.
func (c *Client) Register(ctx context.Context, r BrokerReport) (int64, GroupView, error) {
	return c.report(ctx, protocol.ControllerRegisterBroker, r)
}

// Heartbeat reports liveness and log position; the answer is the group's current state.
func (c *Client) Heartbeat(ctx context.Context, r BrokerReport) (GroupView, error) {
	_, v, err := c.report(ctx, protocol.BrokerHeartbeat, r)
	return v, err
}

// report sends a registration or heartbeat.
func (c *Client) report(ctx context.Context, code protocol.RequestCode, r BrokerReport) (int64, GroupView, error) {
	resp, _, err := c.call(ctx, true, func() *remoting.Command {
		req := remoting.NewRequest(int16(code), nil)
		reportFields(req, r)
		return req
	})
	if err != nil {
		return 0, GroupView{}, err
	}
	id, err := strconv.ParseInt(resp.Ext(fieldBrokerID), 10, 64)
	if err != nil {
		return 0, GroupView{}, fmt.Errorf("%w: answer's brokerId %q", ErrBadRequest, resp.Ext(fieldBrokerID))
	}
	v, err := decodeGroupView(resp.Body)
	return id, v, err
}

// AlterSyncStateSet asks, as the group's master masterID, to replace the SyncStateSet,
// quoting the master epoch and the set's epoch it knows; the answer is the group after.
// A request retried after a lost answer whose first attempt was applied is refused
// ErrStaleSyncStateSet: the caller reads the group (Heartbeat, Group) and decides again.
func (c *Client) AlterSyncStateSet(ctx context.Context, group string, masterID int64,
	masterEpoch, setEpoch int32, set []int64) (GroupView, error) {
	body, err := json.Marshal(alterBody{SyncStateSet: set})
	if err != nil {
		return GroupView{}, fmt.Errorf("controller: encode set: %w", err)
	}
	return c.groupCall(ctx, true, func() *remoting.Command {
		req := remoting.NewRequest(int16(protocol.ControllerAlterSyncStateSet), nil)
		req.SetExt(fieldGroup, group)
		req.SetExt(fieldMasterID, strconv.FormatInt(masterID, 10))
		req.SetExt(fieldMasterEpoch, strconv.FormatInt(int64(masterEpoch), 10))
		req.SetExt(fieldSetEpoch, strconv.FormatInt(int64(setEpoch), 10))
		req.Body = body
		return req
	})
}

// Elect asks for a planned switchover to brokerID (NoBroker: let the policy choose); the
// answer is the group after the election. It reads the group first and elects from the
// master epoch it found (ElectFrom), so that a retry whose first attempt was applied
// (its answer lost to a change of Raft leader) answers the group as that election left
// it instead of a refusal.
func (c *Client) Elect(ctx context.Context, group string, brokerID int64) (GroupView, error) {
	v, err := c.Group(ctx, group)
	if err != nil {
		return GroupView{}, err
	}
	return c.ElectFrom(ctx, group, brokerID, v.MasterEpoch)
}

// ElectFrom asks for an election that replaces the master of masterEpoch with brokerID
// (NoBroker: let the policy choose); the answer is the group after it. It is idempotent:
// when the group is already past masterEpoch with brokerID (any broker, for NoBroker) as
// its master — the election done, by this request's first attempt or another — it
// answers the group as it is; past masterEpoch otherwise, it is refused ErrStaleEpoch.
// masterEpoch 0 elects from whichever epoch is current (a retry may then be refused
// ErrMasterAlive or ErrNotEligible although its first attempt was applied).
func (c *Client) ElectFrom(ctx context.Context, group string, brokerID int64, masterEpoch int32) (GroupView, error) {
	return c.groupCall(ctx, true, func() *remoting.Command {
		req := remoting.NewRequest(int16(protocol.ControllerElectMaster), nil)
		req.SetExt(fieldGroup, group)
		req.SetExt(fieldBrokerID, strconv.FormatInt(brokerID, 10))
		if masterEpoch != 0 {
			req.SetExt(fieldMasterEpoch, strconv.FormatInt(int64(masterEpoch), 10))
		}
		return req
	})
}

// Group returns the group's state (any controller answers; liveness fields only from the
// leader, which is asked first).
func (c *Client) Group(ctx context.Context, group string) (GroupView, error) {
	return c.groupCall(ctx, false, func() *remoting.Command {
		req := remoting.NewRequest(int16(protocol.ControllerGetReplicaInfo), nil)
		req.SetExt(fieldGroup, group)
		return req
	})
}

// Status returns a controller node's view — the nodes, leader, term, last applied index,
// and every group — the leader's when it can be reached.
func (c *Client) Status(ctx context.Context) (Status, error) {
	resp, _, err := c.call(ctx, false, metadataRequest)
	if err != nil {
		return Status{}, err
	}
	return decodeStatus(resp.Body)
}

// StatusOf returns the view of the controller at addr (one of the client's addresses or
// any other), without trying another address.
func (c *Client) StatusOf(ctx context.Context, addr string) (Status, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, c.sign(metadataRequest()))
	if err != nil {
		return Status{}, fmt.Errorf("controller %s: %w", addr, err)
	}
	if resp.Code != int16(protocol.Success) {
		return Status{}, remoteError(resp.Code, resp.Ext(fieldError), resp.Remark, addr)
	}
	return decodeStatus(resp.Body)
}

func metadataRequest() *remoting.Command {
	return remoting.NewRequest(int16(protocol.ControllerGetMetadataInfo), nil)
}

// groupCall sends a request answered with a GroupView.
func (c *Client) groupCall(ctx context.Context, write bool, build func() *remoting.Command) (GroupView, error) {
	resp, _, err := c.call(ctx, write, build)
	if err != nil {
		return GroupView{}, err
	}
	return decodeGroupView(resp.Body)
}

// sign adds the credentials to req, if any.
func (c *Client) sign(req *remoting.Command) *remoting.Command {
	if cr := c.opts.Credentials; cr != nil && cr.AccessKey != "" {
		req.ExtFields = remoting.Ext(cr.SignFields(req.ExtFields, req.Body))
	}
	return req
}

// call sends the request build makes (fresh for every attempt) to the leader, following
// the cluster as the type's comment describes, and returns the successful response and
// the address that answered. A refusal comes back as a *RemoteError. A read answered by
// a follower is asked again of the leader it names once, when the client knows that
// leader's address; the follower's answer stands if the leader does not answer.
func (c *Client) call(ctx context.Context, write bool, build func() *remoting.Command) (*remoting.Command, string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 2*time.Duration(len(c.opts.Addrs))*c.opts.Timeout)
		defer cancel()
	}
	n := len(c.opts.Addrs)
	next := c.leaderIndex()
	var lastErr, notLeader error // the last failure, and the last NOT_LEADER answer
	lastWasNotLeader := false
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		if attempt > 0 && attempt%n == 0 {
			// A whole round failed (an election in progress, or nodes down): wait a
			// little before the next.
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 500*time.Millisecond)
		}
		if err := ctx.Err(); err != nil {
			switch {
			case notLeader != nil && !lastWasNotLeader:
				return nil, "", fmt.Errorf("%w (%w): %w; then: %w", ErrNoController, err, notLeader, lastErr)
			case lastErr != nil:
				return nil, "", fmt.Errorf("%w (%w): %w", ErrNoController, err, lastErr)
			}
			return nil, "", fmt.Errorf("%w: %w", ErrNoController, err)
		}
		addr := c.opts.Addrs[next]
		resp, err := c.invoke(ctx, addr, build())
		if err != nil {
			lastErr, lastWasNotLeader = err, false
			next = (next + 1) % n
			continue
		}
		c.learn(addr, resp)
		if resp.Code == int16(protocol.ControllerNotLeader) {
			lastErr = remoteError(resp.Code, resp.Ext(fieldError), resp.Remark, addr)
			notLeader, lastWasNotLeader = lastErr, true
			if i, ok := c.indexOfNode(resp.Ext(fieldLeaderID)); ok && i != next {
				next = i
			} else {
				next = (next + 1) % n
			}
			continue
		}
		if resp.Code != int16(protocol.Success) {
			return nil, addr, remoteError(resp.Code, resp.Ext(fieldError), resp.Remark, addr)
		}
		if resp.Ext(fieldIsLeader) == "true" {
			c.setLeader(next)
		} else if leader := resp.Ext(fieldLeaderID); !write && leader != "" {
			if lr, la, ok := c.readFromLeader(ctx, leader, next, build); ok {
				return lr, la, nil
			}
		}
		return resp, addr, nil
	}
}

// readFromLeader asks the read again of the leader a follower (at index skip) named:
// at its address when known, else at each other address not known to be another node,
// until one answers as the leader. ok is false when none did.
func (c *Client) readFromLeader(ctx context.Context, leader string, skip int, build func() *remoting.Command) (*remoting.Command, string, bool) {
	order := make([]int, 0, len(c.opts.Addrs))
	if i, known := c.indexOfNode(leader); known {
		order = append(order, i)
	} else {
		for i := range c.opts.Addrs {
			if id := c.nodeAt(i); i != skip && (id == "" || id == leader) {
				order = append(order, i)
			}
		}
	}
	for _, i := range order {
		if i == skip || ctx.Err() != nil {
			continue
		}
		addr := c.opts.Addrs[i]
		resp, err := c.invoke(ctx, addr, build())
		if err != nil {
			continue
		}
		c.learn(addr, resp)
		if resp.Code == int16(protocol.Success) && resp.Ext(fieldIsLeader) == "true" {
			c.setLeader(i)
			return resp, addr, true
		}
	}
	return nil, "", false
}

// nodeAt returns the node id known at address index i, "" when unknown.
func (c *Client) nodeAt(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[c.opts.Addrs[i]]
}

// invoke sends one signed request to addr within Timeout.
func (c *Client) invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	resp, err := c.rc.Invoke(ctx, addr, c.sign(req))
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", addr, err)
	}
	return resp, nil
}

// learn notes which node answers at addr.
func (c *Client) learn(addr string, resp *remoting.Command) {
	if id := resp.Ext(fieldNodeID); id != "" {
		c.mu.Lock()
		c.nodes[addr] = id
		c.mu.Unlock()
	}
}

// indexOfNode returns the index of the address known to be node id.
func (c *Client) indexOfNode(id string) (int, bool) {
	if id == "" {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, a := range c.opts.Addrs {
		if c.nodes[a] == id {
			return i, true
		}
	}
	return 0, false
}

func (c *Client) leaderIndex() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

func (c *Client) setLeader(i int) {
	c.mu.Lock()
	c.leader = i
	c.mu.Unlock()
}
