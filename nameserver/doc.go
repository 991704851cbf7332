// Package nameserver is Ferry's name server: brokers register their address
// and topics with it, and clients ask it where a topic's queues live. It
// speaks the RocketMQ 4.x remoting protocol, so Java brokers, the official
// Go and Java clients and Ferry's own components all use it unchanged.
//
// The package has two parts. RouteTable is the state — clusters, broker
// groups, topic queue data and broker liveness — as a pure, lock-protected
// structure that takes the time as an argument and does no I/O. Server wires
// a RouteTable to a remoting.Server (one file per request family:
// register.go, route.go, admin.go, kv.go, drain.go), keeps the KV
// configuration (kvconfig.go), runs the expiry sweeper and removes a broker
// whose connection closes.
//
// # Requests
//
//	103 REGISTER_BROKER                    broker → name server, every 30 s
//	104 UNREGISTER_BROKER                  broker → name server, on shutdown
//	105 GET_ROUTEINFO_BY_TOPIC             client → name server, every 30 s per topic
//	106 GET_BROKER_CLUSTER_INFO            tools
//	206 GET_ALL_TOPIC_LIST_FROM_NAMESERVER tools, Go admin
//	216 DELETE_TOPIC_IN_NAMESRV            tools, Go admin
//	100 PUT_KV_CONFIG                      tools (mqadmin updateKvConfig, updateOrderConf)
//	101 GET_KV_CONFIG                      tools
//	102 DELETE_KV_CONFIG                   tools
//	219 GET_KVLIST_BY_NAMESPACE            tools
//	205 WIPE_WRITE_PERM_OF_BROKER          tools: drain a broker group
//	327 ADD_WRITE_PERM_OF_BROKER           tools: undrain it
//
// Other codes (GET_TOPICS_BY_CLUSTER, …) are answered
// REQUEST_CODE_NOT_SUPPORTED by the remoting layer.
//
// # KV configuration and drains
//
// The KV configuration is RocketMQ's: namespaces of string entries, saved to
// Options.KVConfigPath (kvConfig.json, written atomically after every change,
// loaded by New, a corrupt file an error). Its ORDER_TOPIC_CONFIG namespace
// gives a topic's route its orderTopicConf — always, where RocketMQ needs
// orderMessageEnable — and is the body of a registration answer. A drained
// broker group (WIPE_WRITE_PERM_OF_BROKER) is answered in routes without the
// write bit until it is undrained; unlike RocketMQ, no registration reverts a
// drain, and it is saved in the KV configuration (FERRY_DRAINED_BROKERS), so
// it outlives a restart. drain.go has the details.
//
// # Registration and liveness
//
// A registration stores the broker address under its cluster, broker name
// and broker id (0 = master). An address registered under another id is
// moved (slave→master switch); an address that re-registers under another
// broker name is first removed from its old group; an address that held the
// same id before is dropped. A broker group belongs to one cluster, and
// registering it under another moves it.
//
// Only a master writes topic queue data, and only on its first registration
// or when its data version changed (RocketMQ's rule): each TopicConfig of the
// body becomes the topic's QueueData for that broker name, and — unlike
// Java's default, which never drops topics on registration — a topic the
// master no longer lists loses that broker's queues, because Ferry's broker
// always registers its full table. Java 5.x brokers sometimes register a
// single new topic ("increment" registration); RetainUnlistedTopics keeps
// the other topics for them. A slave learns its master's address and HA
// address from the response (masterAddr, haServerAddr) while the master is
// registered.
//
// Liveness is kept per broker address: the last registration time, the
// timeout (heartbeatTimeoutMillis, else Options.BrokerExpiry, 120 s by
// default), the data version, the HA address and the remoting connections the
// registrations came on. An address leaves the routes when its timeout passes
// without a registration (swept every ScanInterval, 5 s by default), when the
// connections that carried its registrations close (the idle timeout counts;
// a registration still being handled when its connection closes is withdrawn
// as soon as it is recorded), or on UNREGISTER_BROKER matching its cluster,
// name and id.
//
// Unlike RocketMQ, the name server keeps a broker's binding — (cluster, broker
// name, broker id) ↔ address — until the registration expires, also after
// the address left the routes because its connections closed or it
// unregistered. Meanwhile a registration that would rebind the name and id
// to another address, or the address to another cluster, name or id, is
// refused (ErrTakeover) unless it is trusted (ACL admin credentials), while
// the broker registering again with the same address, name, id and cluster
// gets its route back at once. A registration repeating a binding whose
// holder's connection is open only refreshes it, unless it comes from the
// advertised host (or from where the binding was first registered) and the
// holder does not. The rules are on RouteTable; docs/security.md says what
// they protect against, docs/operations.md how to move a broker.
//
// Brokers in controller mode (automatic failover) register with their master
// epoch (ext ferryMasterEpoch): a registration of a higher epoch takes over
// the bindings of a lower one at once — a newly elected master takes id 0
// from the old master, which can come back as a slave under its own id from
// the same address — and one of a lower epoch than the binding it meets is
// refused (ErrStaleEpoch) with the newer epoch in its answer, even with admin
// credentials, so a replaced master learns it is stale. Fixed-role bindings
// (no epoch) are never taken over by epoch.
//
// Removing a group's last address removes the group from its cluster and its
// queue data from every topic; a topic left without queue data disappears and
// is answered TOPIC_NOT_EXIST. Removing a master but not its slaves keeps the
// topic's queue data: consumers can still read from the slaves, while
// producers (which only use id 0) find no writable queue there.
//
// # Compatibility decisions
//
//   - Routes are standard, compact JSON with quoted brokerAddrs keys, which
//     both the Go client's hand-written parser and fastjson accept; Java's
//     unquoted form for old client versions is never sent. brokerAddrs is
//     always present. Broker addresses containing bytes the Go parser would
//     mangle (',', '"', whitespace, …) are refused at registration, so one
//     bad broker cannot break the routes of others.
//   - A route lists only the broker groups that host the topic.
//   - TBW102 is an ordinary topic here: its route exists when a broker
//     registers it (with the INHERIT perm bit for producer auto-creation).
//   - bodyCrc32 is checked when non-zero (masked IEEE CRC-32, mismatch →
//     SYSTEM_ERROR "crc32 not match", as Java). Java's compressed
//     registration body (compressed=true, off by default in Java) is refused
//     with SYSTEM_ERROR and an explanatory remark.
//   - There is no start-up grace period ("name server not ready") and no
//     acting-master or static-topic support; filter servers are ignored.
//   - The route table is in memory only; after a restart it is rebuilt by
//     the brokers' next registrations (within 30 s). The KV configuration and
//     drains are on disk.
//
// # Goroutines and locks
//
// Server owns one goroutine, the sweeper, started through goFunc and stopped
// by Shutdown; the remoting server owns its reactor and worker pools. The
// route table has a single RWMutex and calls nothing while holding it. The
// KV configuration has its own RWMutex, held across the save of a change (KV
// writes are rare operator actions; a route lookup waits for one at most);
// drains take a mutex of their own first, so the saved record and the table's
// mark change together.
package nameserver
