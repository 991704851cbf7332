package nameserver

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/protocol"
	"github.com/ferrymq/ferry/remoting"
)

func putKV(ns, key, value string) *remoting.Command {
	return protocol.NewRequest(protocol.PutKVConfig, &protocol.PutKVConfigRequestHeader{Namespace: ns, Key: key, Value: value})
}

func getKV(ns, key string) *remoting.Command {
	return protocol.NewRequest(protocol.GetKVConfig, &protocol.GetKVConfigRequestHeader{Namespace: ns, Key: key})
}

func deleteKV(ns, key string) *remoting.Command {
	return protocol.NewRequest(protocol.DeleteKVConfig, &protocol.DeleteKVConfigRequestHeader{Namespace: ns, Key: key})
}

func listKV(ns string) *remoting.Command {
	return protocol.NewRequest(protocol.GetKVListByNamespace, &protocol.GetKVListByNamespaceRequestHeader{Namespace: ns})
}

// TestServerKVConfig: put, get, list and delete answer with RocketMQ's codes and
// bodies, and every change is in kvConfig.json in RocketMQ's shape.
func TestServerKVConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "namesrv", "kvConfig.json")
	s := startServer(t, func(o *Options) { o.KVConfigPath = path })
	c := newClient(t, remoting.SerializeJSON)
	ns := s.Addr()

	resp := invoke(t, c, ns, getKV("app", "k1"))
	require.Equal(t, int16(protocol.QueryNotFound), resp.Code)
	require.Equal(t, "No config item, Namespace: app Key: k1", resp.Remark)
	resp = invoke(t, c, ns, listKV("app"))
	require.Equal(t, int16(protocol.QueryNotFound), resp.Code)
	require.Equal(t, "No config item, Namespace: app", resp.Remark)

	for _, kv := range [][2]string{{"k1", "v1"}, {"k2", "v2"}, {"k1", "v1b"}} {
		resp = invoke(t, c, ns, putKV("app", kv[0], kv[1]))
		require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	}
	resp = invoke(t, c, ns, getKV("app", "k1"))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.Equal(t, "v1b", resp.Ext("value"))
	resp = invoke(t, c, ns, listKV("app"))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.JSONEq(t, `{"table":{"k1":"v1b","k2":"v2"}}`, string(resp.Body))

	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, `{"configTable":{"app":{"k1":"v1b","k2":"v2"}}}`, string(data))

	resp = invoke(t, c, ns, deleteKV("app", "k1"))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	resp = invoke(t, c, ns, deleteKV("app", "absent"))
	require.Equal(t, int16(protocol.Success), resp.Code, "deleting an absent entry succeeds, as RocketMQ")
	resp = invoke(t, c, ns, getKV("app", "k1"))
	require.Equal(t, int16(protocol.QueryNotFound), resp.Code)
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	require.JSONEq(t, `{"configTable":{"app":{"k2":"v2"}}}`, string(data))
	_, err = os.Stat(path + ".tmp")
	require.ErrorIs(t, err, os.ErrNotExist, "no temporary file is left behind")

	resp = invoke(t, c, ns, remoting.NewRequest(int16(protocol.PutKVConfig), nil))
	require.Equal(t, int16(protocol.SystemError), resp.Code)
	require.Contains(t, resp.Remark, "namespace")
}

// TestServerKVConfigSurvivesRestart: a new server on the same file answers what the
// old one stored, drains included.
func TestServerKVConfigSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	opts := DefaultOptions()
	opts.KVConfigPath = path
	first, err := New(opts)
	require.NoError(t, err)
	addr := remoting.ServeTest(t, first, nil)
	c := newClient(t, remoting.SerializeJSON)
	require.Equal(t, int16(protocol.Success), invoke(t, c, addr, putKV(NamespaceOrderTopicConfig, "T", "broker-a:4")).Code)
	resp := invoke(t, c, addr, protocol.NewRequest(protocol.WipeWritePermOfBroker, &protocol.BrokerWritePermRequestHeader{BrokerName: "broker-b"}))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, first.Shutdown(ctx))

	second := startServer(t, func(o *Options) { o.KVConfigPath = path })
	resp = invoke(t, c, second.Addr(), getKV(NamespaceOrderTopicConfig, "T"))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	require.Equal(t, "broker-a:4", resp.Ext("value"))
	require.Equal(t, []string{"broker-b"}, second.Table().Drained())
}

// TestServerKVConfigCorruptFile: a file that does not parse stops New with an error
// naming the file, and the file is left as it was.
func TestServerKVConfigCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"configTable":{"app":`), 0o644))
	opts := DefaultOptions()
	opts.KVConfigPath = path
	_, err := New(opts)
	require.ErrorIs(t, err, ErrKVConfig)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "corrupt")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, `{"configTable":{"app":`, string(data))
}

// TestServerKVConfigMemoryOnly: without a path nothing is written, and the KV config
// still works.
func TestServerKVConfigMemoryOnly(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, remoting.SerializeRocketMQ)
	require.Equal(t, int16(protocol.Success), invoke(t, c, s.Addr(), putKV("a", "b", "c")).Code)
	require.Equal(t, "c", invoke(t, c, s.Addr(), getKV("a", "b")).Ext("value"))
}

// TestServerOrderTopicConf: an ORDER_TOPIC_CONFIG entry reaches the topic's route as
// orderTopicConf, and the registration answer carries the namespace.
func TestServerOrderTopicConf(t *testing.T) {
	s := startServer(t, nil)
	c := newClient(t, remoting.SerializeJSON)
	ns := s.Addr()
	master := regHeader("DefaultCluster", "broker-a", "10.0.0.5:10911", 0)
	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, registerRequest(t, master,
		regBody(1, topicConfig("Ordered", 4, 6), topicConfig("Plain", 4, 6)))).Code)

	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, putKV(NamespaceOrderTopicConfig, "Ordered", "broker-a:4")).Code)
	resp := invoke(t, c, ns, routeRequest("Ordered"))
	route, err := goClientDecodeRoute(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "broker-a:4", route.OrderTopicConf)
	resp = invoke(t, c, ns, routeRequest("Plain"))
	route, err = goClientDecodeRoute(resp.Body)
	require.NoError(t, err)
	require.Empty(t, route.OrderTopicConf)

	resp = invoke(t, c, ns, registerRequest(t, master, regBody(1, topicConfig("Ordered", 4, 6))))
	require.Equal(t, int16(protocol.Success), resp.Code, resp.Remark)
	var table protocol.KVTable
	require.NoError(t, json.Unmarshal(resp.Body, &table))
	require.Equal(t, map[string]string{"Ordered": "broker-a:4"}, table.Table)

	require.Equal(t, int16(protocol.Success), invoke(t, c, ns, deleteKV(NamespaceOrderTopicConfig, "Ordered")).Code)
	resp = invoke(t, c, ns, routeRequest("Ordered"))
	route, err = goClientDecodeRoute(resp.Body)
	require.NoError(t, err)
	require.Empty(t, route.OrderTopicConf)
}

// TestKVStoreFollowsTheFile: when only the directory sync after the rename fails, the
// new file is what a restart reads, so the table keeps the change too (and the request
// still fails: the change is not known to be durable); a failure before the rename
// changes neither.
func TestKVStoreFollowsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	s, err := openKVStore(path)
	require.NoError(t, err)
	efs := mmap.NewErrorFS(mmap.OSFS{})
	s.fsys = efs
	require.NoError(t, s.put("ns", "a", "1"))
	reread := func(key string) (string, bool) {
		t.Helper()
		again, err := openKVStore(path)
		require.NoError(t, err)
		return again.get("ns", key)
	}

	efs.Inject(mmap.Rule{Ops: mmap.OpSyncDir, Times: 1})
	require.ErrorIs(t, s.put("ns", "b", "2"), mmap.ErrRenameNotDurable)
	v, ok := s.get("ns", "b")
	require.True(t, ok, "the table follows the file")
	require.Equal(t, "2", v)
	v, ok = reread("b")
	require.True(t, ok)
	require.Equal(t, "2", v)

	efs.Inject(mmap.Rule{Ops: mmap.OpRename, Times: 1})
	err = s.put("ns", "c", "3")
	require.ErrorIs(t, err, ErrKVConfig)
	require.NotErrorIs(t, err, mmap.ErrRenameNotDurable)
	_, ok = s.get("ns", "c")
	require.False(t, ok, "rolled back: the file was not replaced")
	_, ok = reread("c")
	require.False(t, ok)

	efs.Inject(mmap.Rule{Ops: mmap.OpSyncDir, Times: 1})
	removed, err := s.remove("ns", "a")
	require.ErrorIs(t, err, mmap.ErrRenameNotDurable)
	require.True(t, removed)
	_, ok = s.get("ns", "a")
	require.False(t, ok)
	_, ok = reread("a")
	require.False(t, ok)
}
