// Package acl implements RocketMQ's ACL 1.0 ("plain ACL", plain_acl.yml) as a pure
// decision library: the broker and the name server hand each request to [ACL.Check]
// and answer NO_PERMISSION (16) with the error text as remark when it refuses. The
// package reads the accounts file, verifies request signatures, and decides per request
// code and resource; it keeps no connection state. [Watcher] reloads the file when it
// changes. Package acl/sign computes and verifies the signatures; it is the client
// side, and all a client imports.
//
// # Accounts file
//
// RocketMQ's plain_acl.yml shape (distribution/conf/plain_acl.yml):
//
//	globalWhiteRemoteAddresses:      # requests from these need no credentials at all
//	  - 10.10.103.*
//	  - 192.168.0.*
//	accounts:
//	  - accessKey: RocketMQ          # at least 7 characters (RocketMQ refuses length <= 6)
//	    secretKey: 12345678          # at least 7 characters; scalars are read as written
//	    whiteRemoteAddress:          # one address pattern; empty: none
//	    admin: false
//	    defaultTopicPerm: DENY       # for topics not in topicPerms; empty means DENY
//	    defaultGroupPerm: SUB        # for groups not in groupPerms; empty means DENY
//	    topicPerms:
//	      - topicA=DENY
//	      - topicB=PUB|SUB
//	      - topicC=SUB
//	    groupPerms:
//	      - groupA=DENY
//	      - groupB=PUB|SUB
//	      - groupC=SUB
//	  - accessKey: rocketmq2
//	    secretKey: 12345678
//	    whiteRemoteAddress: 192.168.1.*
//	    admin: true                  # admin: every code, topic and group
//
// Permission words are DENY, PUB, SUB, PUB|SUB and SUB|PUB. Address patterns are
// described at [AddressPattern]. RocketMQ's dataVersion key is accepted and ignored.
//
// Ferry validates harder than RocketMQ and refuses the whole file (listing every
// problem as a [*ConfigError], wrapping [ErrInvalidConfig]) on: an unknown key, an
// empty document, a missing or short key, a duplicate access key, an unknown permission
// word (RocketMQ reads it as DENY), a malformed or duplicate "name=PERM" entry, an
// invalid topic or group name, a %RETRY% name in topicPerms or groupPerms, and a bad
// address pattern. RocketMQ's directory of several ACL files is not supported: one file.
//
// # Decision order
//
// [ACL.Check] applies RocketMQ's order (PlainPermissionManager.validate and
// PlainPermissionChecker, 5.x):
//
//  0. Ext fields with a repeated key: refused (ErrDuplicateField).
//  1. Peer address in globalWhiteRemoteAddresses: allowed, nothing else checked.
//  2. No AccessKey field: refused (ErrAddressNotAllowed). Unknown access key: refused
//     (ErrUnknownAccessKey).
//  3. Peer address matches the account's whiteRemoteAddress: allowed, without signature
//     and without permission checks (this is RocketMQ's documented behaviour: the
//     account white list is a bypass, not a restriction).
//  4. Signature missing or wrong: refused (ErrBadSignature).
//  5. Admin account: allowed.
//  6. Admin-only request code: refused (ErrAdminOnly).
//  7. Every topic and group of the request against the code's needed permission: the
//     explicit topicPerms/groupPerms entry, else defaultTopicPerm/defaultGroupPerm; a
//     DENY refuses, a needed permission must be owned (PUB|SUB owns both). A %RETRY%
//     topic is checked as its group with SUB. Sending to RMQ_SYS_TRACE_TOPIC is always
//     allowed (message trace). A refusal is a [*DeniedError] (ErrDenied).
//     The default permission never covers a system topic (protocol.IsSystemTopic) or a
//     %DLQ% topic: only an explicit topicPerms entry grants one; looking up the route of
//     the trace topic or of TBW102 needs none.
//
// Codes not in the table below need only steps 0-4 (an authenticated account), as in
// RocketMQ; every code a Ferry broker or name server serves has a row (a test in package
// broker enforces it, and probes each code as an account denied a topic).
//
// # Resources known only to the handler
//
// Some requests touch a topic their header does not name: the record at a commit-log
// offset, a half message's real topic, the rows of a listing, the original topics of
// the copies in a %RETRY% or %DLQ% topic. For those codes (Rule Referenced or Filtered,
// and reads of a %RETRY% or %DLQ% topic: RetryRecords) the [Gate] uses
// [ACL.Authorize], which returns the [Caller] besides the decision, and hands the handler
// a [*Grant] in the request's context ([GrantFrom]). The handler asks it, after reading,
// whether the caller may SUB or PUB that topic ([Grant.CheckRecordTopic],
// [Grant.MayTopic]); a refusal is logged like the gate's and answered NO_PERMISSION. A
// nil Grant (ACL off, or an admin's pull) permits everything, so with ACL off nothing
// changes; the send and pull paths get no Grant and allocate nothing more.
//
// # Request codes
//
// The table ([Rules]); "field" is the ext field Check reads the resource from, "caller"
// means the resource is in the body and comes from Request.Topics/Groups, "record" that
// the handler checks the topic of the record it reads (Referenced), "rows" that the
// handler leaves out what the caller may not access (Filtered), "open" that any
// authenticated account may send it. Rows marked * are Ferry's additions: RocketMQ checks
// only the signature for those codes.
//
//	code  name                               topic          group                  needs
//	  10  SEND_MESSAGE                       PUB  "topic"   -
//	 310  SEND_MESSAGE_V2                    PUB  "b"       -
//	 320  SEND_BATCH_MESSAGE                 PUB  "b"       -
//	 324  SEND_REPLY_MESSAGE *               PUB  "topic"   -
//	 325  SEND_REPLY_MESSAGE_V2 *            PUB  "b"       -
//	  37  END_TRANSACTION *                  PUB  record    -                      the half message's REAL_TOPIC
//	  11  PULL_MESSAGE                       SUB  "topic"   SUB "consumerGroup"    %RETRY%/%DLQ% copies filtered
//	 361  LITE_PULL_MESSAGE *                SUB  "topic"   SUB "consumerGroup"    %RETRY%/%DLQ% copies filtered
//	  12  QUERY_MESSAGE                      SUB  "topic"   -                      %RETRY%/%DLQ% copies filtered
//	  33  VIEW_MESSAGE_BY_ID *               SUB  record    -
//	  14  QUERY_CONSUMER_OFFSET *            SUB  "topic"   SUB "consumerGroup"
//	  15  UPDATE_CONSUMER_OFFSET             SUB  "topic"   SUB "consumerGroup"
//	  29  SEARCH_OFFSET_BY_TIMESTAMP *       SUB  "topic"   -
//	  30  GET_MAX_OFFSET *                   SUB  "topic"   -
//	  31  GET_MIN_OFFSET *                   SUB  "topic"   -
//	  32  GET_EARLIEST_MSG_STORETIME *       SUB  "topic"   -
//	  34  HEART_BEAT                         SUB  caller    SUB caller             subscriptions, consumer groups
//	  35  UNREGISTER_CLIENT                  -              SUB "consumerGroup"
//	  36  CONSUMER_SEND_MSG_BACK             SUB  record    SUB "group"            record: the original message
//	  38  GET_CONSUMER_LIST_BY_GROUP         -              SUB "consumerGroup"
//	  41  LOCK_BATCH_MQ *                    SUB  caller    SUB caller
//	  42  UNLOCK_BATCH_MQ *                  SUB  caller    SUB caller
//	  46  CHECK_CLIENT_CONFIG                open
//	 105  GET_ROUTEINFO_BY_TOPIC *           ANY  "topic"   -                      name server; PUB or SUB
//	 106  GET_BROKER_CLUSTER_INFO            open                                  name server
//	  21  GET_ALL_TOPIC_CONFIG *             ANY  rows      -
//	 201  GET_ALL_SUBSCRIPTIONGROUP_CONFIG * -              SUB rows
//	 202  GET_TOPIC_STATS_INFO *             SUB  "topic"   -
//	 208  GET_CONSUME_STATS *                SUB  "topic"   SUB "consumerGroup"    topicList refused, group's topics rows
//	 203  GET_CONSUMER_CONNECTION_LIST *     SUB  rows      SUB "consumerGroup"    subscriptions filtered
//	 204  GET_PRODUCER_CONNECTION_LIST       open
//	 300  QUERY_TOPIC_CONSUME_BY_WHO *       SUB  "topic"   -
//	  28  GET_BROKER_RUNTIME_INFO            open
//	 309  CONSUME_MESSAGE_DIRECTLY *         SUB  record    SUB "consumerGroup"
//
//	admin only: 17 UPDATE_AND_CREATE_TOPIC, 25 UPDATE_BROKER_CONFIG, 200
//	UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 207 DELETE_SUBSCRIPTIONGROUP, 215
//	DELETE_TOPIC_IN_BROKER, 50 UPDATE_AND_CREATE_ACL_CONFIG, 51 DELETE_ACL_CONFIG, 52
//	GET_BROKER_CLUSTER_ACL_INFO, 513 UPDATE_AND_CREATE_STATIC_TOPIC (RocketMQ's
//	ADMIN_CODE), and Ferry's additions: 18 UPDATE_AND_CREATE_TOPIC_LIST, 26
//	GET_BROKER_CONFIG, 53 UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, 54
//	GET_BROKER_CLUSTER_ACL_CONFIG, 100 PUT_KV_CONFIG, 101 GET_KV_CONFIG, 102
//	DELETE_KV_CONFIG, 219 GET_KVLIST_BY_NAMESPACE, 103 REGISTER_BROKER, 104 UNREGISTER_BROKER, 205 WIPE_WRITE_PERM_OF_BROKER, 216
//	DELETE_TOPIC_IN_NAMESRV, 222 INVOKE_BROKER_TO_RESET_OFFSET, 318
//	UPDATE_NAMESRV_CONFIG, 319 GET_NAMESRV_CONFIG, 327 ADD_WRITE_PERM_OF_BROKER, 43
//	GET_ALL_CONSUMER_OFFSET, 45 GET_ALL_DELAY_OFFSET, 307 GET_CONSUMER_RUNNING_INFO,
//	206 GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 1007 GET_BROKER_EPOCH_CACHE, 315
//	VIEW_BROKER_STATS_DATA (its key names a topic and a group), 30026
//	FERRY_CANCEL_SCHEDULED (Ferry's own code: cancels a scheduled message); the controller's
//	codes: 904 BROKER_HEARTBEAT, 1001 CONTROLLER_ALTER_SYNC_STATE_SET, 1002
//	CONTROLLER_ELECT_MASTER, 1003 CONTROLLER_REGISTER_BROKER, 1004
//	CONTROLLER_GET_REPLICA_INFO, 1005 CONTROLLER_GET_METADATA_INFO (a controller with ACL
//	on serves admin accounts only).
//
// REGISTER_BROKER and UNREGISTER_BROKER being admin-only means that, with ACL on in a
// name server, brokers must sign with an admin account or be in its global white list.
// The same goes for a slave's metadata sync from its master (RocketMQ's advice: put the
// slaves in the master's global white list).
//
// # Threat model
//
// ACL 1.0 authenticates requests with a shared secret and authorizes per topic and
// group; it does not encrypt. What it stops: clients without a valid account, accounts
// using topics, groups or admin codes they were not granted, and requests whose signed
// values or body were altered. What it does not stop (use TLS and network controls):
// an on-path observer reads everything and can replay a captured request verbatim (there
// is no nonce or timestamp); because the signature covers values but not keys or value
// boundaries, such an attacker can also move bytes between adjacent fields, rename a key
// without changing the key order, or add fields with empty values, all without breaking
// the signature; white-listed addresses need no credentials, so address spoofing inside
// the network defeats them. Secrets live in plain text in the accounts file. Error texts
// never contain a secret or an expected signature; strings from the request are quoted
// and truncated.
package acl
