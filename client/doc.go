// Package client is Ferry's own Go client. It speaks the RocketMQ remoting protocol, so
// it works against RocketMQ 4.x brokers too, and it is the fastest way to talk to Ferry:
// it batches sends automatically and, against a Ferry broker, uses Ferry's msgpack header
// instead of JSON.
//
// A Client holds the connections and the topic routes; Producers share it:
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
// broker (WithRetries), and the route is looked up again.
//
// # Errors
//
// Errors wrap the sentinels of this package (ErrClosed, ErrNoRoute, ErrBroker,
// ErrIllegalMessage; test with errors.Is). A broker's refusal is a *BrokerError with its
// response code and remark. Messages that break the broker's limits (topic name, body
// size, properties) are refused before anything is sent.
//
// The consumers and the admin API are not in this package yet.
package client
