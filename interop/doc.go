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
//
// Automatic failover (controller mode) with real processes: failover_cluster_test.go (a
// name server, three controllers and brokers in controller mode), failover_continue_test.go
// (ordered consumption, a pending transaction and a delayed message across a master
// kill), and the acceptance harnesses kept out of `go test ./...` by build tags:
// failover_stress_test.go and failover_controllers_test.go (tag failoverstress: `make
// failover-stress`, `make failover-controllers`), failover_partition_test.go (tag
// failoverpartition: `make failover-partition`, Docker), failover_load_test.go (their
// load of both client kinds and the read-back).
package interop
