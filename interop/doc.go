// Package interop holds the end-to-end tests that drive Ferry's name server and broker with
// the official RocketMQ Go client (github.com/apache/rocketmq-client-go/v2), the external
// oracle for wire compatibility. It has no non-test code.
//
// Files: send_test.go (send modes, lookups by id and key), consume_test.go (a push
// consumer group: exactly once, rebalance, restart), tags_test.go (tag subscriptions),
// restart_test.go (broker restart on its data directory), position_test.go (consume from
// a timestamp, lite pull offsets), badinput_test.go (refused input), wire_test.go
// (frame-level rules and long polling), helpers_test.go (raw requests through Ferry's
// remoting client for what the official client never sends, and delivery recorders).
package interop
