package conf

// keyMeanings is the one table of what each key means, one line each, shown by
// `ferry config` (Setting.Meaning). A test checks that it covers exactly the
// keys of Config; the field comments in conf.go, namesrv.go and broker.go give
// the details.
func keyMeanings() map[string]string {
	return map[string]string{
		"namesrv.listen":       "address the name server listens on (empty host = every interface, port 0 = any)",
		"namesrv.brokerExpiry": "a broker that has not re-registered for this long leaves the route table",
		"namesrv.scanInterval": "how often expired brokers are swept; shorter than namesrv.brokerExpiry",
		"namesrv.logLevel":     "log level of the name server; empty inherits log.level",
		"namesrv.maxFrameSize": "largest remoting frame accepted",
		"namesrv.idleTimeout":  "a connection silent for this long is closed",

		"broker.brokerName":       "broker group name; a master and its slaves share it",
		"broker.clusterName":      "cluster the broker group belongs to",
		"broker.brokerId":         "0 for a master, > 0 for a slave",
		"broker.brokerRole":       "ASYNC_MASTER, SYNC_MASTER or SLAVE",
		"broker.listen":           "client-facing address (empty host = every interface, port 0 = any)",
		"broker.advertisedAddr":   "host:port put in message ids and routes; empty = broker.listen",
		"broker.namesrvAddrs":     "name servers the broker registers with",
		"broker.registerInterval": "re-registration period (failures retried sooner); below namesrv.brokerExpiry",
		"broker.maxFrameSize":     "largest remoting frame accepted; at least maxMessageSize + 64KiB",
		"broker.maxRequestBytes":  "request bytes held at once on all connections; more is SYSTEM_BUSY",
		"broker.idleTimeout":      "a connection silent for this long is closed",

		"broker.workers.send":        "workers for sends (a sync-flush or sync-master send holds one while it waits)",
		"broker.workers.pull":        "workers for pulls (a parked long poll holds none)",
		"broker.workers.query":       "workers for message queries by key and views by id",
		"broker.workers.admin":       "workers for heartbeats, offsets, topic and group admin, other small requests",
		"broker.workers.transaction": "workers for END_TRANSACTION",

		"broker.dataDir":                  "store root: commitlog/, consumequeue/, index/, config/, checkpoint",
		"broker.flushDiskType":            "ASYNC_FLUSH (fsync in the background) or SYNC_FLUSH (fsync before replying)",
		"broker.flushInterval":            "ASYNC_FLUSH: period of the flusher",
		"broker.flushLeastPages":          "ASYNC_FLUSH: fewest dirty 4 KiB pages a round flushes (0 = any)",
		"broker.flushThoroughInterval":    "ASYNC_FLUSH: flush everything at least this often",
		"broker.syncFlushTimeout":         "SYNC_FLUSH: a send's wait for its fsync (then FLUSH_DISK_TIMEOUT)",
		"broker.commitLogSegmentSize":     "size of each commit log file; fixed once a store exists",
		"broker.consumeQueueUnitsPerFile": "20-byte units per consume queue file",
		"broker.maxMessageSize":           "largest message body stored",

		"broker.fileReservedTime":    "a commit log segment untouched this long may be deleted",
		"broker.deleteWhen":          "local hours (';'-separated, 00-23) when expired segments are deleted",
		"broker.diskMaxUsedRatio":    "disk usage % above which expired segments are deleted at any hour",
		"broker.diskForceCleanRatio": "disk usage % above which the oldest segments go even if not expired",
		"broker.diskFullRatio":       "disk usage % above which sends are refused (SERVICE_NOT_AVAILABLE)",
		"broker.scrubInterval":       "background scrub of every record and unit, this often (0 = never); reports only",
		"broker.scrubBytesPerSec":    "read rate of the background scrub",

		"broker.autoCreateTopic":       "a send to an unknown topic creates it from the TBW102 template",
		"broker.defaultTopicQueueNums": "queues of the TBW102 template; caps auto-created topics",
		"broker.longPollingEnable":     "park a pull that finds nothing until a message arrives",
		"broker.shortPollingTimeout":   "how long an empty pull is parked when long polling is off",
		"broker.delayLevels":           "delay of each delay level, level 1 first (units ms, s, m, h, d)",
		"broker.maxReconsumeTimes":     "redeliveries before a message goes to %DLQ% (when the client does not say)",

		"broker.enablePropertyFilter":          "serve SQL92 subscriptions (filters over message properties); off = refuse them",
		"broker.traceTopicEnable":              "create the message-trace topic at start, so clients' trace records are stored",
		"broker.msgTraceTopicName":             "the message-trace topic",
		"broker.storeReplyMessageEnable":       "store request-reply answers in the reply topic as well as pushing them",
		"broker.aclEnable":                     "check every request against the ACL accounts file (NO_PERMISSION if refused)",
		"broker.aclFile":                       "ACL accounts file (plain_acl.yml shape), re-read when it changes",
		"broker.accessKey":                     "access key this broker signs its requests to name servers / its master with",
		"broker.secretKey":                     "secret key of broker.accessKey",
		"namesrv.aclEnable":                    "check every request against the ACL accounts file (registrations need an admin account)",
		"namesrv.aclFile":                      "ACL accounts file (plain_acl.yml shape), re-read when it changes",
		"broker.tlsMode":                       "TLS on the broker port: disabled, permissive (TLS and plain) or enforcing (TLS only)",
		"broker.tlsCertFile":                   "PEM certificate chain the broker presents",
		"broker.tlsKeyFile":                    "PEM private key of broker.tlsCertFile",
		"broker.tlsClientCaFile":               "PEM CAs client certificates are verified against (empty: not checked)",
		"broker.tlsRequireClientCert":          "refuse TLS clients without a certificate from broker.tlsClientCaFile",
		"broker.tlsToNamesrv":                  "register with the name servers (a SLAVE: also reach its master, HA port included) over TLS",
		"namesrv.tlsMode":                      "TLS on the name-server port: disabled, permissive (TLS and plain) or enforcing (TLS only)",
		"namesrv.tlsCertFile":                  "PEM certificate chain the name server presents",
		"namesrv.tlsKeyFile":                   "PEM private key of namesrv.tlsCertFile",
		"namesrv.tlsClientCaFile":              "PEM CAs client certificates are verified against (empty: not checked)",
		"namesrv.tlsRequireClientCert":         "refuse TLS clients without a certificate from namesrv.tlsClientCaFile",
		"broker.slaveReadEnable":               "pulls may suggest a slave to lagging consumers (suggestWhichBrokerId); off = the master",
		"broker.accessMessageInMemoryMaxRatio": "% of physical memory a pulled message may lag the log's end and count as in memory",

		"broker.transactionTimeout":       "age of a half message before its producer is asked for the outcome",
		"broker.transactionCheckInterval": "period of the transaction check-back scan",
		"broker.transactionCheckMax":      "checks before a half message is discarded",

		"broker.haListen":             "address a master accepts slaves on; empty = listen host, listen port + 1",
		"broker.haMasterAddr":         "a SLAVE's master HA address (SLAVE only); empty = learned from the name server",
		"broker.haSlaveTimeout":       "SYNC_MASTER: a send's wait for a slave ack (FLUSH_SLAVE_TIMEOUT); 0 = syncFlushTimeout",
		"broker.slaveSyncInterval":    "SLAVE: how often topics, groups, offsets and delay progress are copied from the master",
		"broker.haSlaveFallbehindMax": "SYNC_MASTER: slave lag beyond which a send replies SLAVE_NOT_AVAILABLE",
		"broker.logLevel":             "log level of the broker; empty inherits log.level",

		"log.level":  "trace, debug, info, warn or error",
		"log.format": "auto (console on a terminal, JSON otherwise), console or json",
	}
}
