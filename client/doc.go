// Package client is Ferry's own Go client. It speaks the RocketMQ remoting protocol, so
// it works against RocketMQ 4.x brokers too, and it is the fastest way to talk to Ferry:
// it batches sends automatically and, against a Ferry broker, uses Ferry's msgpack header
// instead of JSON.
//
// A Client holds the connections and the topic routes; Producers and PushConsumers
// share it:
//
//	c, err := client.New(client.WithNameServers("127.0.0.1:9876"))
//	if err != nil { ... }
//	defer c.Close()
//	p, err := c.NewProducer("my-group")
//	if err != nil { ... }
//	defer p.Close()
//	res, err := p.Send(ctx, message.NewMessage("my-topic", []byte("hello")))
//
// # Sending
//
// Send waits for the broker's answer; SendAsync calls back; SendOneway does not wait;
// SendBatch sends given messages as one request. Messages to the same topic are batched
// automatically: while requests to it are in flight, new messages accumulate and go out
// together as one SEND_BATCH_MESSAGE (bounded by WithLinger and WithBatchLimits), each
// still getting its own SendResult. A message never waits when nothing is in flight, so
// a lone synchronous sender pays no batching delay. Delayed messages and bodies large
// enough to be compressed (WithCompressOver) go on their own.
//
// Queues: round robin by default; WithSelector(HashSelector) keeps the messages of one
// sharding key in one queue, in order (one request in flight per queue); a
// QueueSelectorFunc chooses any other way. Retriable failures are tried again on another
// broker (WithRetries), and the route is looked up again. A send that got no answer at
// all (the broker refused the connection or never replied) also drops the topic's cached
// route, retried or not, so that after a failover the next send finds the group's new
// master at once rather than at the next periodic refresh (WithRouteRefresh, 30 s); a
// route fetched less than 100 ms before is kept, so that a dead broker costs the name
// servers one lookup per 100 ms, not one per failed send.
//
// On a topic with a dedup window (the dedupWindow topic attribute), the broker stores a
// message at most once per id within the window, and WithIdempotence makes the producer
// use it: a send whose outcome is unknown is retried on the same broker group, a
// message's queue follows from its id and the id is written into the message, so
// resending the same Message is the same message to the broker (docs/delivery.md,
// "Deduplicated sends").
//
// # Large messages
//
// Send and SendAsync send a body over the max body size (WithMaxBodySize, the broker's
// 4 MiB) in chunks, up to WithMaxMessageSize (256 MiB): the body, compressed as a whole
// when that helps, is cut into chunks of at most the max body size, sent in order, one at
// a time, to one queue; each chunk is an ordinary message with the original properties
// and PropertyChunkID, PropertyChunkIndex, PropertyChunkCount, PropertyChunkSize,
// PropertyChunkBodySize and PropertyChunkZlib. The SendResult is the whole message's (its
// id, its first chunk's queue and offsets, and Chunks). A send failing mid-way leaves
// orphan chunks that consumers drop.
//
// Every consumer reassembles the chunks into one MessageExt before the application sees
// it, bounded by WithChunkReassembly (512 MiB of partial messages; a partial message is
// dropped 10,000 offsets or 5 minutes after its last chunk), and never commits past the
// first chunk of a message not yet consumed whole (PullResult.CommitOffset for a
// PullConsumer). A push consumer retries a failed chunked message locally and then sends
// every chunk to the dead-letter topic. Official consumers see the chunks
// (docs/compatibility.md); docs/delivery.md, "Large messages", has the details.
//
// # Consuming
//
// A PushConsumer is a member of a consumer group in clustering mode: the members split
// the topic's queues between them (RocketMQ's average allocation over the sorted queues
// and client ids, so Ferry's and the official clients can share a group), recomputed
// every 20 s and at once when a broker reports that members came or went
// (NOTIFY_CONSUMER_IDS_CHANGED). Each owned queue is pulled with long polling; the
// handler (a ConsumeFunc) gets batches of one message by default (WithConsumeBatch) on
// a pool of 20 goroutines (WithConsumeGoroutines), with a context that ends when the
// consumer closes:
//
//	pc, err := c.NewPushConsumer("my-group", "my-topic", "TagA || TagB",
//		func(ctx context.Context, msgs []*client.MessageExt) client.ConsumeResult {
//			// ...
//			return client.ConsumeSuccess
//		}, client.WithConsumeFrom(client.ConsumeFromFirstOffset))
//	if err != nil { ... }
//	if err := pc.Start(ctx); err != nil { ... }
//	defer pc.Close()
//
// A queue stops pulling while it holds 1000 unconsumed messages or 100 MiB
// (WithQueueCacheLimits). Offsets are committed to the brokers every 5 s, when a queue
// moves to another member, and on Close; the committed offset is the lowest message not
// yet consumed, so handlers finishing out of order never skip one, and a queue's next
// owner may see again only what was in flight. A queue the group has no offset for
// starts where WithConsumeFrom says (default: its end).
//
// WithOrderly consumes each queue one batch at a time, in queue order, while holding the
// queue's lock on the broker (LOCK_BATCH_MQ after each rebalance, renewed every 20 s), so
// messages of one sharding key are handled in the order they were sent, also across a
// member leaving; a failed batch is retried locally after WithSuspendTime. With
// WithBroadcasting every member gets every message and keeps its offsets in a local file
// (WithOffsetsDir; written atomically, checked with a CRC). WithAllocation chooses how
// clustering members split the queues: AllocateAveragely (the default) or
// AllocateConsistentHash.
//
// ConsumeRetryLater (or a panic) hands the messages back to the broker
// (CONSUMER_SEND_MSG_BACK); they come back through the group's retry topic
// %RETRY%<group>, which the consumer subscribes too, after the broker's delay for level
// 3 + reconsume times, and after WithMaxReconsumeTimes failures (default 16) the broker
// moves them to %DLQ%<group>. If the hand-back fails, the consumer retries them itself
// 5 s later. Close stops pulling, waits for the handlers in flight, commits and leaves
// the group, so the other members take the queues over at once.
//
// # SQL92 selectors
//
// Wherever a consumer takes a subscription expression (NewPushConsumer,
// LitePullConsumer.Subscribe, PullConsumer.Pull), SQL92(expr) subscribes by an SQL92
// expression over the message properties instead of tags:
//
//	pc, err := c.NewPushConsumer("big-orders", "orders", client.SQL92("amount > 100 AND region = 'eu'"), handler)
//
// The broker filters (a Ferry broker by default, a RocketMQ one with
// enablePropertyFilter). A refusal — an expression the broker cannot parse, or a broker
// that does not filter by SQL92 — fails Start (push and lite-pull consumers ask the
// topic's brokers first, CHECK_CLIENT_CONFIG) or Pull with a *SubscriptionError
// (errors.Is ErrSubscriptionRefused) naming the expression and the broker's answer.
//
// # Timer messages
//
// message.Message's SetDeliverAfter(d) and SetDeliverAt(t) make the broker hold a message
// until its time (RocketMQ 5 timers: TIMER_DELAY_SEC or TIMER_DELAY_MS, TIMER_DELIVER_MS;
// millisecond precision on Ferry). Timer and delay-level messages are never batched.
//
// # Request-reply
//
// Producer.Request sends a message and waits for its reply (RocketMQ's request-reply, so
// official clients answer Ferry's requests and the other way round); the consumer
// answers with NewReply, which carries the reply body, and Producer.SendReply
// (SEND_REPLY_MESSAGE):
//
//	reply, err := p.Request(ctx, message.NewMessage("quotes", []byte("EURUSD")))
//	// on the consumer's side:
//	r, err := client.NewReply(request, []byte("1.0842"))
//	_, err = replier.SendReply(ctx, r)
//
// # Namespaces
//
// WithNamespace(ns) puts the client's topics and groups in a namespace the way the
// official clients do: topic t is "ns%t" on the brokers, group g "ns%g" with retry topic
// "%RETRY%ns%g", so namespaced Ferry and official clients share them. Messages handed to
// the application carry the topic without the namespace; queues and send results name
// it as the brokers do. The Admin API is not namespaced.
//
// # Transactions
//
// A TransactionProducer ties a message to a local transaction: SendInTransaction stores
// the message as a half message (invisible to consumers), runs the local transaction
// and commits or rolls the message back with its outcome. A local transaction that
// returns TransactionUnknown or panics, or a producer that dies before ending one, leaves
// the decision to the broker's check-back: it asks a producer of the same group, whose
// TransactionChecker answers.
//
//	tp, err := c.NewTransactionProducer("my-tx-group", client.TransactionCheckerFunc(
//		func(ctx context.Context, m *client.MessageExt) client.TransactionState {
//			return lookUpOrder(m.Keys()) // commit, rollback or unknown (ask again later)
//		}))
//	if err != nil { ... }
//	defer tp.Close()
//	res, err := tp.SendInTransaction(ctx, msg,
//		func(ctx context.Context, m *message.Message, sent client.SendResult) client.TransactionState {
//			if err := saveOrder(ctx, sent.MsgID); err != nil {
//				return client.TransactionRollback
//			}
//			return client.TransactionCommit
//		})
//
// A committed message is stored in its topic when SendInTransaction returns. Checks are
// answered on a few workers per producer, never on a connection's reader. Brokers check
// only producers they know from heartbeats, which go to the brokers of the topics the
// producer has sent to; a producer that takes over the transactions of one that died
// calls Register with their topics first.
//
// SendMessagesInTransaction (a Ferry extension, Ferry brokers only) sends several
// messages, to topics and queues of one broker group, as one transaction: all of them
// become consumable on commit, none on rollback, even across broker crashes; the
// TransactionChecker is asked once per transaction and gets the messages from
// TransactionMessages. SendTxMessages also commits consumer offsets of one group with
// the transaction (consume-transform-produce). See docs/transactions.md, "Several messages
// in one transaction" and "Consumer offsets in a transaction".
//
// # Errors
//
// Errors wrap the sentinels of this package (ErrClosed, ErrNoRoute, ErrBroker,
// ErrNoPermission, ErrIllegalMessage; test with errors.Is). A broker's refusal is a
// *BrokerError with its response code and remark. Messages that break the broker's
// limits (topic name, body size, properties) are refused before anything is sent.
//
// # ACL
//
// Brokers and name servers with ACL on (RocketMQ's ACL 1.0, package acl) refuse
// unsigned requests. WithCredentials(accessKey, secretKey) signs every request the
// client sends — route lookups, sends (sync, async, batched, oneway), pulls, heartbeats,
// offsets, END_TRANSACTION (also when answering a check), admin calls — as the official
// clients do: AccessKey and Signature ext fields, HMAC-SHA1 of the other fields' values
// and the body, whatever the header codec. A refusal is a *BrokerError with code
// NO_PERMISSION whose remark says why (unknown key, bad signature, admin only, or the
// topic or group denied); errors.Is(err, ErrNoPermission) holds.
//
// # Administration
//
// Client.Admin returns the admin API ferryctl is built on: topics (create, update,
// delete, list, route, stats), the cluster and brokers (cluster info, runtime info,
// config), messages (QueryByID with a client or offset message id, QueryByKey with a time
// range, QueryByOffset) and consumer groups (offsets, lag, resets by time, subscription
// groups, connections).
//
// # Message trace
//
// WithTrace(topic) (topic "" for RMQ_SYS_TRACE_TOPIC) makes the client record RocketMQ
// message-trace records (RIP-6): a Pub record for each message its producers send (group,
// client host, time, cost, success, broker, offset message id), and SubBefore and SubAfter
// records around each handler call of its push consumers (group, client host, time,
// reconsume times, cost, success). They go to the trace topic in RocketMQ's text layout —
// the official clients, RocketMQ's dashboard and `ferryctl message trace` read them —
// batched into trace messages keyed by message id and keys:
//
//	c, err := client.New(client.WithNameServers("127.0.0.1:9876"), client.WithTrace(""))
//
// Tracing never blocks or fails a send or a consume: records wait in a bounded queue that
// a background goroutine empties, and a record that finds it full is dropped and counted
// (TraceStats). WithTraceOptions sets the queue size, batch size, linger and trace
// messages in flight; Close sends what is queued. DecodeTraceRecords decodes a trace
// message's body (any client's), AppendTraceRecord encodes one record. Oneway sends,
// transactional sends and lite-pull consumers are not traced.
//
// # Pulling
//
// A PullConsumer (Client.NewPullConsumer) is the low level: Pull reads up to n messages
// of one queue from an explicit offset and says what it found (PullFound,
// PullNoNewMessage, PullNoMatchedMessage, PullOffsetIllegal) with the next offset and the
// queue's bounds; PullWait lets the broker hold the request until a message arrives.
// FetchQueues lists a topic's queues; CommittedOffset and CommitOffset read and write
// the group's offsets, MinOffset, MaxOffset and OffsetByTime the queue's. It joins no
// group and keeps no state but broker addresses and the chunked messages it is
// reassembling.
//
// A LitePullConsumer (Client.NewLitePullConsumer, like RocketMQ's
// DefaultLitePullConsumer) pulls in the background and hands messages out through Poll:
//
//	lc, err := c.NewLitePullConsumer("my-group", client.WithConsumeFrom(client.ConsumeFromFirstOffset))
//	if err != nil { ... }
//	if err := lc.Subscribe("my-topic", "*"); err != nil { ... } // or lc.Assign(queues...)
//	if err := lc.Start(ctx); err != nil { ... }
//	defer lc.Close()
//	for {
//		for _, m := range lc.Poll(ctx, time.Second) {
//			// ...
//		}
//	}
//
// Subscribed, it is a clustering member of its group (heartbeats as CONSUME_ACTIVELY)
// and takes its share of the queues the way push members do, so it can share a group
// with them; assigned, it reads the queues it was given without joining the group.
// Each queue is pulled with long polling into a buffer bounded by WithQueueCacheLimits;
// Seek, SeekToBegin and SeekToEnd move a queue, Pause and Resume stop and restart it.
// What Poll returned is committed every WithCommitInterval, when a queue is dropped and
// on Close; with WithManualCommit only by Commit. Queues start at the group's committed
// offsets, else where WithConsumeFrom says.
package client
