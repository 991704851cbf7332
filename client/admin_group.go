package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

// Consumer groups in the admin API: offsets and consume statistics, offset changes and
// resets, subscription-group configs, connections, and the requests a broker relays to
// one consumer client (running info, consume directly).

// QueueProgress is a consumer group's position in one queue.
type QueueProgress struct {
	// Queue names the queue.
	Queue MessageQueue
	// BrokerOffset is the next offset the broker will write (the queue's max offset).
	BrokerOffset int64
	// ConsumerOffset is the group's committed offset: the next message it will consume.
	// ConsumerOffsets reports −1 when the group has none; brokers answering
	// GET_CONSUME_STATS report 0 then.
	ConsumerOffset int64
	// LastTimestamp is the store time of the last consumed message, when the broker
	// reports it (zero otherwise).
	LastTimestamp time.Time
}

// Lag is how many messages the group has still to consume in the queue: BrokerOffset −
// ConsumerOffset, counting no committed offset as 0, never negative.
func (p QueueProgress) Lag() int64 { return max(p.BrokerOffset-max(p.ConsumerOffset, 0), 0) }

// ConsumeStats is a consumer group's progress (GET_CONSUME_STATS).
type ConsumeStats struct {
	// Group is the consumer group.
	Group string
	// Queues lists the group's queues, sorted by topic, broker name and queue id.
	Queues []QueueProgress
	// ConsumeTPS is the brokers' consume rate for the group, messages per second,
	// summed (0 when computed queue by queue).
	ConsumeTPS float64
}

// Lag is the sum of the queues' lags.
func (s *ConsumeStats) Lag() int64 {
	var n int64
	for _, q := range s.Queues {
		n += q.Lag()
	}
	return n
}

// readQueues lists the queues consumers of topic read on broker group name.
func (r *TopicRoute) readQueues(name string) []MessageQueue {
	qi, _ := r.queues(name)
	out := make([]MessageQueue, 0, qi.ReadQueues)
	for id := range qi.ReadQueues {
		out = append(out, MessageQueue{Topic: r.Topic, BrokerName: name, QueueID: id})
	}
	return out
}

// ConsumerOffsets reports group's committed offset and the broker offset of every queue
// consumers read of topic, asking queue by queue (QUERY_CONSUMER_OFFSET, GET_MAX_OFFSET),
// which every broker serves. ConsumerOffset is −1 for a queue the group has committed no
// offset for.
func (a *Admin) ConsumerOffsets(ctx context.Context, group, topic string) ([]QueueProgress, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("client: consumer offsets: %w", err)
	}
	var out []QueueProgress
	for _, b := range r.brokers() {
		ps, err := a.progressByOffsets(ctx, group, b, r.readQueues(b.name))
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

// progressByOffsets asks broker b for group's offset and the max offset of each queue.
func (a *Admin) progressByOffsets(ctx context.Context, group string, b brokerRef, queues []MessageQueue) ([]QueueProgress, error) {
	out := make([]QueueProgress, 0, len(queues))
	for _, mq := range queues {
		p := QueueProgress{Queue: mq}
		var err error
		if p.ConsumerOffset, err = a.c.committedOffset(ctx, b.addr, group, mq); err != nil {
			return out, fmt.Errorf("client: offset of %s in %s: %w", group, mq, err)
		}
		if p.BrokerOffset, err = a.c.maxOffset(ctx, b.addr, mq); err != nil {
			return out, fmt.Errorf("client: max offset of %s: %w", mq, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// ConsumeStats reports group's progress in every queue of topic on every broker holding
// it (GET_CONSUME_STATS); with an empty topic, in every topic the brokers know the group
// for, asking every master. A broker that does not serve the request
// (REQUEST_CODE_NOT_SUPPORTED) is asked queue by queue as ConsumerOffsets does, which
// needs a topic.
func (a *Admin) ConsumeStats(ctx context.Context, group, topic string) (*ConsumeStats, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	var r *TopicRoute
	var brokers []brokerRef
	var err error
	if topic != "" {
		if r, err = a.TopicRoute(ctx, topic); err != nil {
			return nil, fmt.Errorf("client: consume stats: %w", err)
		}
		brokers = r.brokers()
	} else if brokers, err = a.resolve(ctx, Target{}); err != nil {
		return nil, fmt.Errorf("client: consume stats: %w", err)
	}
	st := &ConsumeStats{Group: group}
	var errs []error
	a.eachBroker(ctx, brokers, func(brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.GetConsumeStats, &protocol.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic})
	}, func(b brokerRef, resp *remoting.Command, err error) {
		switch {
		case isNotSupported(err) && r != nil:
			ps, err := a.progressByOffsets(ctx, group, b, r.readQueues(b.name))
			st.Queues = append(st.Queues, ps...)
			errs = append(errs, err)
		case err != nil:
			errs = append(errs, fmt.Errorf("client: consume stats of %s on %s: %w", group, b.addr, err))
		default:
			cs, err := protocol.DecodeConsumeStats(resp.Body)
			if err != nil {
				errs = append(errs, fmt.Errorf("client: consume stats of %s from %s: %w", group, b.addr, err))
				return
			}
			st.ConsumeTPS += cs.ConsumeTps
			for mq, o := range cs.OffsetTable {
				st.Queues = append(st.Queues, QueueProgress{Queue: MessageQueue(mq), BrokerOffset: o.BrokerOffset,
					ConsumerOffset: o.ConsumerOffset, LastTimestamp: msTime(o.LastTimestamp)})
			}
		}
	})
	slices.SortFunc(st.Queues, func(x, y QueueProgress) int { return compareQueues(x.Queue, y.Queue) })
	return st, errors.Join(errs...)
}

// UpdateConsumerOffset sets group's committed offset of queue mq (UPDATE_CONSUMER_OFFSET).
// Consumers of the group that are online keep their own position and overwrite it with
// their next commit: stop them first, or use ResetOffsetByTime.
func (a *Admin) UpdateConsumerOffset(ctx context.Context, group string, mq MessageQueue, offset int64) error {
	if err := checkGroup(group); err != nil {
		return err
	}
	if offset < 0 {
		return fmt.Errorf("%w: offset %d is negative", ErrInvalidArgument, offset)
	}
	addr, err := a.queueBroker(ctx, mq)
	if err != nil {
		return fmt.Errorf("client: update consumer offset: %w", err)
	}
	if err := a.c.commitOffset(ctx, addr, group, mq, offset); err != nil {
		return fmt.Errorf("client: update offset of %s in %s to %d: %w", group, mq, offset, err)
	}
	return nil
}

// queueBroker checks that mq is a queue of its topic's route and returns its master.
func (a *Admin) queueBroker(ctx context.Context, mq MessageQueue) (string, error) {
	r, err := a.TopicRoute(ctx, mq.Topic)
	if err != nil {
		return "", err
	}
	qi, ok := r.queues(mq.BrokerName)
	addr := r.master(mq.BrokerName)
	switch {
	case !ok || addr == "":
		return "", fmt.Errorf("%w: topic %s has no queues on a broker %q with a master", ErrInvalidArgument, mq.Topic, mq.BrokerName)
	case mq.QueueID < 0 || mq.QueueID >= max(qi.ReadQueues, qi.WriteQueues):
		return "", fmt.Errorf("%w: topic %s has %d queues on broker %s; queue %d does not exist", ErrInvalidArgument,
			mq.Topic, max(qi.ReadQueues, qi.WriteQueues), mq.BrokerName, mq.QueueID)
	}
	return addr, nil
}

// ResetOffsetByTime moves group's offsets in every queue of topic to the first message
// stored at or after t, forward or back (INVOKE_BROKER_TO_RESET_OFFSET, forced), and
// returns the new offset of each queue. Each broker stores the offsets and tells the
// group's online consumers to take them. A broker that answers CONSUMER_NOT_ONLINE (a
// RocketMQ 4.x broker with the group offline) or does not serve the request gets the
// offsets set queue by queue instead (SEARCH_OFFSET_BY_TIMESTAMP, UPDATE_CONSUMER_OFFSET,
// as mqadmin does); for a broker that does not serve it, only while the group has no
// member connected there (GET_CONSUMER_LIST_BY_GROUP), since nothing could tell online
// members.
func (a *Admin) ResetOffsetByTime(ctx context.Context, group, topic string, t time.Time) (map[MessageQueue]int64, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("client: reset offset: %w", err)
	}
	ts := t.UnixMilli()
	out := map[MessageQueue]int64{}
	var errs []error
	a.eachBroker(ctx, r.brokers(), func(brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.InvokeBrokerToResetOffset, &protocol.ResetOffsetRequestHeader{
			Topic: topic, Group: group, Timestamp: ts, IsForce: true})
	}, func(b brokerRef, resp *remoting.Command, err error) {
		switch {
		case hasCode(err, protocol.ConsumerNotOnline) || isNotSupported(err):
			if err := a.resetDirect(ctx, group, b, r.readQueues(b.name), ts, isNotSupported(err), out); err != nil {
				errs = append(errs, err)
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("client: reset offsets of %s in %s on %s: %w", group, topic, b.addr, err))
		default:
			body, err := protocol.DecodeResetOffsetBody(resp.Body)
			if err != nil {
				errs = append(errs, fmt.Errorf("client: reset offsets of %s from %s: %w", group, b.addr, err))
				return
			}
			for mq, off := range body.OffsetTable {
				out[MessageQueue(mq)] = off
			}
		}
	})
	return out, errors.Join(errs...)
}

// resetDirect sets group's offsets of queues on broker b to the first message stored at
// or after ts, recording them in out. With checkOffline it first makes sure no member of
// the group is connected to b.
func (a *Admin) resetDirect(ctx context.Context, group string, b brokerRef, queues []MessageQueue, ts int64,
	checkOffline bool, out map[MessageQueue]int64) error {
	if checkOffline {
		resp, err := a.c.invoke(ctx, b.addr, protocol.NewRequest(protocol.GetConsumerListByGroup,
			&protocol.ConsumerListRequestHeader{ConsumerGroup: group}))
		var ids []string
		if err == nil && len(resp.Body) > 0 {
			ids, err = protocol.DecodeConsumerIDList(resp.Body)
		}
		var be *BrokerError
		if err != nil && !errors.As(err, &be) {
			return fmt.Errorf("client: members of %s on %s: %w", group, b.addr, err)
		}
		if len(ids) > 0 {
			return fmt.Errorf("client: reset offsets of %s: broker %s (%s) cannot tell its %d online consumers to reset "+
				"(INVOKE_BROKER_TO_RESET_OFFSET not supported); stop them and try again", group, b.name, b.addr, len(ids))
		}
	}
	for _, mq := range queues {
		off, err := a.c.offsetByTime(ctx, b.addr, mq, ts)
		if err != nil {
			return fmt.Errorf("client: search offset of %s at %d: %w", mq, ts, err)
		}
		if err := a.c.commitOffset(ctx, b.addr, group, mq, off); err != nil {
			return fmt.Errorf("client: reset offset of %s in %s to %d: %w", group, mq, off, err)
		}
		out[mq] = off
	}
	return nil
}

// CreateSubscriptionGroup creates or replaces a consumer group's config on the brokers of
// target (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP); the zero Target means every master. Start
// from protocol.DefaultSubscriptionGroupConfig(name) for RocketMQ's defaults.
func (a *Admin) CreateSubscriptionGroup(ctx context.Context, cfg protocol.SubscriptionGroupConfig, target Target) error {
	if err := checkGroup(cfg.GroupName); err != nil {
		return err
	}
	body, err := protocol.EncodeSubscriptionGroupConfig(&cfg)
	if err != nil {
		return fmt.Errorf("%w: subscription group %s: %w", ErrInvalidArgument, cfg.GroupName, err)
	}
	brokers, err := a.resolve(ctx, target)
	if err != nil {
		return fmt.Errorf("client: create subscription group %s: %w", cfg.GroupName, err)
	}
	return a.writeAll(ctx, "create subscription group "+cfg.GroupName, brokers, func(brokerRef) *remoting.Command {
		req := protocol.NewRequest(protocol.UpdateAndCreateSubscriptionGroup, nil)
		req.Body = body
		return req
	})
}

// DeleteSubscriptionGroup deletes a consumer group's config from the brokers of target
// (DELETE_SUBSCRIPTIONGROUP), and its committed offsets too with cleanOffsets; the zero
// Target means every master.
func (a *Admin) DeleteSubscriptionGroup(ctx context.Context, group string, cleanOffsets bool, target Target) error {
	if err := checkGroup(group); err != nil {
		return err
	}
	brokers, err := a.resolve(ctx, target)
	if err != nil {
		return fmt.Errorf("client: delete subscription group %s: %w", group, err)
	}
	return a.writeAll(ctx, "delete subscription group "+group, brokers, func(brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.DeleteSubscriptionGroup,
			&protocol.DeleteSubscriptionGroupRequestHeader{GroupName: group, CleanOffset: cleanOffsets})
	})
}

// SubscriptionGroups reads every consumer group config of one broker (address or broker
// name; GET_ALL_SUBSCRIPTIONGROUP_CONFIG), by group name.
func (a *Admin) SubscriptionGroups(ctx context.Context, broker string) (map[string]protocol.SubscriptionGroupConfig, error) {
	addr, err := a.brokerAddr(ctx, broker)
	if err != nil {
		return nil, fmt.Errorf("client: subscription groups: %w", err)
	}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.GetAllSubscriptionGroupConfig, nil))
	if err != nil {
		return nil, fmt.Errorf("client: subscription groups: %w", err)
	}
	w, err := protocol.DecodeSubscriptionGroupWrapper(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: subscription groups from %s: %w", addr, err)
	}
	return w.SubscriptionGroupTable, nil
}

// ConsumerConnections lists the online members of a consumer group
// (GET_CONSUMER_CONNECTION_LIST), merged over every master: one connection per client
// id, and what the members registered (subscriptions, consume type, message model,
// where to start). A group online nowhere is an error with a *BrokerError
// CONSUMER_NOT_ONLINE.
func (a *Admin) ConsumerConnections(ctx context.Context, group string) (*protocol.ConsumerConnection, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	brokers, err := a.resolve(ctx, Target{})
	if err != nil {
		return nil, fmt.Errorf("client: consumer connections: %w", err)
	}
	var out *protocol.ConsumerConnection
	var errs []error
	a.eachBroker(ctx, brokers, func(brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.GetConsumerConnectionList, &protocol.GetConsumerConnectionListRequestHeader{ConsumerGroup: group})
	}, func(b brokerRef, resp *remoting.Command, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("client: consumer connections of %s on %s: %w", group, b.addr, err))
			return
		}
		cc, err := protocol.DecodeConsumerConnection(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("client: consumer connections of %s from %s: %w", group, b.addr, err))
			return
		}
		if out == nil {
			out = &protocol.ConsumerConnection{ConsumeFromWhere: cc.ConsumeFromWhere, ConsumeType: cc.ConsumeType,
				MessageModel: cc.MessageModel, SubscriptionTable: map[string]protocol.SubscriptionData{}}
		}
		out.ConnectionSet = mergeConnections(out.ConnectionSet, cc.ConnectionSet)
		maps.Copy(out.SubscriptionTable, cc.SubscriptionTable)
	})
	if out == nil {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// ProducerConnections lists the online producers of a producer group
// (GET_PRODUCER_CONNECTION_LIST), merged over every master, one per client id, sorted.
// Brokers that know none of them may answer an error; it is returned only when no
// broker answered.
func (a *Admin) ProducerConnections(ctx context.Context, group string) ([]protocol.Connection, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	brokers, err := a.resolve(ctx, Target{})
	if err != nil {
		return nil, fmt.Errorf("client: producer connections: %w", err)
	}
	var out []protocol.Connection
	var errs []error
	answered := false
	a.eachBroker(ctx, brokers, func(brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.GetProducerConnectionList, &protocol.GetProducerConnectionListRequestHeader{ProducerGroup: group})
	}, func(b brokerRef, resp *remoting.Command, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("client: producer connections of %s on %s: %w", group, b.addr, err))
			return
		}
		pc, err := protocol.DecodeProducerConnection(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("client: producer connections of %s from %s: %w", group, b.addr, err))
			return
		}
		answered = true
		out = mergeConnections(out, pc.ConnectionSet)
	})
	if !answered {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// mergeConnections adds the connections of more whose client id is not in set yet and
// sorts by client id.
func mergeConnections(set, more []protocol.Connection) []protocol.Connection {
	for _, c := range more {
		if !slices.ContainsFunc(set, func(x protocol.Connection) bool { return x.ClientID == c.ClientID }) {
			set = append(set, c)
		}
	}
	slices.SortFunc(set, func(x, y protocol.Connection) int { return strings.Compare(x.ClientID, y.ClientID) })
	return set
}

// ConsumedBy lists the consumer groups that consume topic — subscribed to it or holding
// offsets for it — on every broker holding it (QUERY_TOPIC_CONSUME_BY_WHO), sorted.
func (a *Admin) ConsumedBy(ctx context.Context, topic string) ([]string, error) {
	r, err := a.TopicRoute(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("client: consumed by: %w", err)
	}
	var out []string
	var errs []error
	a.eachBroker(ctx, r.brokers(), func(brokerRef) *remoting.Command {
		return protocol.NewRequest(protocol.QueryTopicConsumeByWho, &protocol.QueryTopicConsumeByWhoRequestHeader{Topic: topic})
	}, func(b brokerRef, resp *remoting.Command, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("client: groups consuming %s on %s: %w", topic, b.addr, err))
			return
		}
		gl, err := protocol.DecodeGroupList(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("client: groups consuming %s from %s: %w", topic, b.addr, err))
			return
		}
		out = append(out, gl.GroupList...)
	})
	return slices.Compact(slices.Sorted(slices.Values(out))), errors.Join(errs...)
}

// ConsumerRunningInfo asks one consumer client of group, through a broker it is connected
// to, for its running state (GET_CONSUMER_RUNNING_INFO; with jstack, a thread dump from a
// Java client). It returns the client's answer as the client wrote it: JSON-like text
// whose MessageQueue-keyed maps use fastjson's object keys, so it is not always valid
// JSON and differs between the Java and Go clients. Masters are tried in name order.
func (a *Admin) ConsumerRunningInfo(ctx context.Context, group, clientID string, jstack bool) ([]byte, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	if clientID == "" {
		return nil, fmt.Errorf("%w: empty client id", ErrInvalidArgument)
	}
	brokers, err := a.resolve(ctx, Target{})
	if err != nil {
		return nil, fmt.Errorf("client: consumer running info: %w", err)
	}
	var errs []error
	for _, b := range brokers {
		resp, err := a.c.invoke(ctx, b.addr, protocol.NewRequest(protocol.GetConsumerRunningInfo,
			&protocol.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: clientID, JstackEnable: jstack}))
		if err == nil {
			return resp.Body, nil
		}
		errs = append(errs, fmt.Errorf("client: running info of %s/%s via %s: %w", group, clientID, b.addr, err))
	}
	return nil, errors.Join(errs...)
}

// ConsumeMessageDirectly has the broker storing msg (a message QueryByID, QueryByKey or
// QueryByOffset returned) push it to consumer client clientID of group, which runs its
// handler on it and reports the outcome (CONSUME_MESSAGE_DIRECTLY). Nothing is committed
// or retried: it is a test of the consumer, or a manual redelivery.
func (a *Admin) ConsumeMessageDirectly(ctx context.Context, group, clientID string, msg *MessageExt) (*protocol.ConsumeMessageDirectlyResult, error) {
	if err := checkGroup(group); err != nil {
		return nil, err
	}
	if clientID == "" || msg == nil {
		return nil, fmt.Errorf("%w: consume directly needs a client id and a message", ErrInvalidArgument)
	}
	ci, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("client: consume directly: %w", err)
	}
	b, addr, ok := ci.brokerAt(msg.StoreHost.String())
	if !ok {
		if b, ok = ci.Brokers[msg.Queue.BrokerName]; !ok || b.MasterAddr() == "" {
			return nil, fmt.Errorf("%w: message %s: neither its store host %s nor its broker %q is known to the name servers",
				ErrInvalidArgument, msg.MsgID, msg.StoreHost, msg.Queue.BrokerName)
		}
		addr = b.MasterAddr()
	}
	resp, err := a.c.invoke(ctx, addr, protocol.NewRequest(protocol.ConsumeMessageDirectly,
		&protocol.ConsumeMessageDirectlyResultRequestHeader{ConsumerGroup: group, ClientID: clientID,
			MsgID: msg.OffsetMsgID, BrokerName: b.Name, Topic: msg.Topic}))
	if err != nil {
		return nil, fmt.Errorf("client: consume %s directly on %s/%s: %w", msg.MsgID, group, clientID, err)
	}
	res, err := protocol.DecodeConsumeMessageDirectlyResult(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: consume %s directly: %w", msg.MsgID, err)
	}
	return res, nil
}
