package launch

import (
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/acl"
	"github.com/ferrymq/ferry/broker"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/controller"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/nameserver"
)

// Every key of the table maps onto exactly one field of its server's Options — broker.*
// onto broker.Options, namesrv.* onto nameserver.Options — or is marked as applied by the
// ferry command; keys copied as they are never share a field; and the keys converted by
// hand are keys with an Options field.
func TestEveryKeyHasOneOptionsField(t *testing.T) {
	optionsOf := map[string]reflect.Value{
		"broker":     reflect.ValueOf(broker.DefaultOptions()),
		"namesrv":    reflect.ValueOf(nameserver.DefaultOptions()),
		"controller": reflect.ValueOf(controller.DefaultServerOptions()),
	}
	converted := map[string]map[string]bool{"broker": convertedBrokerKeys(), "namesrv": convertedNameServerKeys(),
		"controller": convertedControllerKeys()}
	copied := map[string]string{}
	keys := map[string]conf.Key{}
	for _, k := range conf.KeyTable() {
		keys[k.Name] = k
		if k.Process != "" {
			require.Empty(t, k.Option, k.Name)
			continue
		}
		opts, ok := optionsOf[k.Section()]
		require.True(t, ok, "%s: section %s has no Options; mark the key with its process", k.Name, k.Section())
		_, err := propertyField(opts, k.Option)
		require.NoError(t, err, "%s: option %q", k.Name, k.Option)
		if !converted[k.Section()][k.Name] {
			field := k.Section() + ":" + k.Option
			require.NotContains(t, copied, field, "%s and %s both set %s", copied[field], k.Name, field)
			copied[field] = k.Name
		}
	}
	for section, set := range converted {
		for name := range set {
			k, ok := keys[name]
			require.True(t, ok, "converted key %s is not a key", name)
			require.Equal(t, section, k.Section(), name)
			require.NotEmpty(t, k.Option, name)
		}
	}
}

// Every key copied as it is reaches its Options field: each is set to a value other than
// its default, and the field holds that value after copyKeys.
func TestCopyKeysSetsEveryField(t *testing.T) {
	cfg := conf.DefaultConfig()
	changed := map[string]reflect.Value{}
	for _, k := range conf.KeyTable() {
		if k.Option == "" || convertedBrokerKeys()[k.Name] || convertedNameServerKeys()[k.Name] || convertedControllerKeys()[k.Name] {
			continue
		}
		v := k.In(&cfg)
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Int, reflect.Int64:
			v.SetInt(v.Int() + 3)
		case reflect.Slice:
			v.Set(reflect.Append(v, reflect.ValueOf("10.0.0.9:9876")))
		default:
			t.Fatalf("%s: no test value for a %s", k.Name, v.Type())
		}
		changed[k.Name] = v
	}
	bo, no, co := broker.DefaultOptions(), nameserver.DefaultOptions(), controller.DefaultServerOptions()
	require.NoError(t, copyKeys(&cfg, "broker", &bo, convertedBrokerKeys()))
	require.NoError(t, copyKeys(&cfg, "namesrv", &no, convertedNameServerKeys()))
	require.NoError(t, copyKeys(&cfg, "controller", &co, convertedControllerKeys()))
	roots := map[string]reflect.Value{"broker": reflect.ValueOf(&bo).Elem(), "namesrv": reflect.ValueOf(&no).Elem(),
		"controller": reflect.ValueOf(&co).Elem()}
	for _, k := range conf.KeyTable() {
		want, ok := changed[k.Name]
		if !ok {
			continue
		}
		got, err := optionField(roots[k.Section()], k.Option)
		require.NoError(t, err, k.Name)
		require.Equal(t, want.Convert(got.Type()).Interface(), got.Interface(), "%s onto %s", k.Name, k.Option)
	}
}

// copyKeys refuses to copy a value across kinds (a name onto a number), so a key whose
// Options field wants a conversion is caught by TestBrokerOptionsCarryEverySetting rather
// than set wrong.
func TestAssignKeepsKinds(t *testing.T) {
	var dst struct {
		N int
		S string
		D time.Duration
		L []string
	}
	v := reflect.ValueOf(&dst).Elem()
	require.NoError(t, assign(v.Field(0), reflect.ValueOf(int64(7))))
	require.NoError(t, assign(v.Field(1), reflect.ValueOf(conf.SyncMaster)))
	require.NoError(t, assign(v.Field(2), reflect.ValueOf(3*time.Second)))
	require.NoError(t, assign(v.Field(3), reflect.ValueOf([]string{"a"})))
	require.Equal(t, 7, dst.N)
	require.Equal(t, "SYNC_MASTER", dst.S)
	require.Equal(t, 3*time.Second, dst.D)
	require.Equal(t, []string{"a"}, dst.L)
	require.Error(t, assign(v.Field(1), reflect.ValueOf(65)), "an int becomes no string")
	require.Error(t, assign(v.Field(0), reflect.ValueOf("7")))
	require.Error(t, assign(v.Field(0), reflect.ValueOf(true)))
	require.Error(t, assign(v.Field(3), reflect.ValueOf([]int{1})))
}

// GET_BROKER_CONFIG's properties of a default broker, each under RocketMQ's name and in
// its unit: the wire format the key table must keep.
func TestBrokerPropertiesOfTheDefaults(t *testing.T) {
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir = "/srv/ferry"
	o, err := BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	require.NotNil(t, o.ConfigProperties)
	require.Equal(t, map[string]string{
		"accessMessageInMemoryMaxRatio":      "40",
		"aclEnable":                          "false",
		"allAckInSyncStateSet":               "false",
		"autoCreateTopicEnable":              "true",
		"brokerAddr":                         "127.0.0.1:10911",
		"brokerClusterName":                  "DefaultCluster",
		"brokerId":                           "0",
		"brokerName":                         "broker-a",
		"brokerRole":                         "ASYNC_MASTER",
		"cleanResourceInterval":              "10000",
		"defaultTopicQueueNums":              "8",
		"diskMaxUsedSpaceRatio":              "75",
		"diskSpaceCleanForciblyRatio":        "85",
		"diskSpaceWarningLevelRatio":         "90",
		"enableControllerMode":               "false",
		"enablePropertyFilter":               "true",
		"ferryAccessMessageInMemoryMaxBytes": strconv.FormatInt(o.Store.InMemoryMaxBytes, 10),
		"fileReservedTime":                   "72",
		"flushCommitLogLeastPages":           "4",
		"flushDiskType":                      "ASYNC_FLUSH",
		"flushIntervalCommitLog":             "500",
		"haMasterAddress":                    "",
		"haMaxTimeSlaveNotCatchup":           "15000",
		"haServerAddr":                       "",
		"haSlaveFallbehindMax":               "268435456",
		"longPollingEnable":                  "true",
		"mappedFileSizeCommitLog":            "1073741824",
		"mappedFileSizeConsumeQueue":         "6000000",
		"maxMessageSize":                     "4194304",
		"maxReconsumeTimes":                  "16",
		"minInSyncReplicas":                  "1",
		"messageDelayLevel":                  "1s 5s 10s 30s 1m0s 2m0s 3m0s 4m0s 5m0s 6m0s 7m0s 8m0s 9m0s 10m0s 20m0s 30m0s 1h0m0s 2h0m0s",
		"msgTraceTopicName":                  "RMQ_SYS_TRACE_TOPIC",
		"namesrvAddr":                        "127.0.0.1:9876",
		"pullMessageThreadPoolNums":          "16",
		"registerBrokerTimeoutMills":         "30000",
		"sendMessageThreadPoolNums":          "16",
		"shortPollingTimeMills":              "1000",
		"slaveReadEnable":                    "false",
		"slaveTimeout":                       "5000",
		"storePathRootDir":                   "/srv/ferry",
		"storeReplyMessageEnable":            "true",
		"syncFlushTimeout":                   "5000",
		"tls.server.mode":                    "disabled",
		"traceTopicEnable":                   "true",
		"transactionCheckInterval":           "30000",
		"transactionCheckMax":                "15",
		"transactionTimeOut":                 "6000",
	}, o.ConfigProperties(&o))
}

// The properties follow the broker's options as it runs with them — an edit after launch
// included — in RocketMQ's units.
func TestBrokerPropertiesFollowTheOptions(t *testing.T) {
	cfg := conf.DefaultBrokerConfig()
	cfg.DataDir = t.TempDir()
	cfg.Role, cfg.BrokerID, cfg.HAMasterAddr = conf.Slave, 2, "127.0.0.1:30912"
	cfg.FlushDiskType = conf.SyncFlush
	cfg.DiskMaxUsedRatio, cfg.DiskForceCleanRatio, cfg.DiskFullRatio = 29, 57, 58
	cfg.DelayLevels = "1s 90s 2h"
	cfg.FileReservedTime = 90 * time.Minute
	cfg.ConsumeQueueUnitsPerFile = 1000
	cfg.NamesrvAddrs = []string{"127.0.0.1:1", "127.0.0.1:2"}
	cfg.HASlaveTimeout = 1700 * time.Millisecond
	cfg.ACLEnable, cfg.ACLFile = true, "plain_acl.yml"
	o, err := BrokerOptions(cfg, mmap.OSFS{}, zerolog.Nop())
	require.NoError(t, err)
	o.EnablePropertyFilter = false
	o.HAAddr = "10.0.0.1:10912"
	props := o.ConfigProperties(&o)
	for prop, want := range map[string]string{
		"brokerRole":                  "SLAVE",
		"brokerId":                    "2",
		"haMasterAddress":             "127.0.0.1:30912",
		"haServerAddr":                "10.0.0.1:10912",
		"flushDiskType":               "SYNC_FLUSH",
		"diskMaxUsedSpaceRatio":       "28", // as before: int64(0.29 * 100)
		"diskSpaceCleanForciblyRatio": "56", // likewise (0.57 * 100 = 56.99…)
		"messageDelayLevel":           "1s 1m30s 2h0m0s",
		"fileReservedTime":            "1",
		"mappedFileSizeConsumeQueue":  "20000",
		"namesrvAddr":                 "127.0.0.1:1;127.0.0.1:2",
		"slaveTimeout":                "1700",
		"enablePropertyFilter":        "false",
		"aclEnable":                   "false", // no checker until the broker loads the file
	} {
		require.Equal(t, want, props[prop], prop)
	}
	o.ACL = &acl.ACL{}
	require.Equal(t, "true", o.ConfigProperties(&o)["aclEnable"])
}
