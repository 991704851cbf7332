package conf

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/ferrymq/ferry/internal/logging"
)

// Names of the stable flags registered by BindFlags.
const (
	// FlagConfig is --config: the YAML config file (see LoadOptions.ConfigFile).
	FlagConfig = "config"
	// FlagDataDir is --data-dir: broker.dataDir.
	FlagDataDir = "data-dir"
	// FlagNamesrvListen is --namesrv-listen: namesrv.listen.
	FlagNamesrvListen = "namesrv-listen"
	// FlagBrokerListen is --broker-listen: broker.listen.
	FlagBrokerListen = "broker-listen"
	// FlagNamesrvAddr is --namesrv-addr: broker.namesrvAddrs. It may be
	// repeated, and each value may hold several addresses separated by ','
	// or ';' (RocketMQ's -n "a:9876;b:9876").
	FlagNamesrvAddr = "namesrv-addr"
	// FlagLogLevel is --log-level: log.level.
	FlagLogLevel = "log-level"
	// FlagHTTPListen is --http-listen: broker.httpListen, or namesrv.httpListen
	// when the server loaded is the name server (LoadOptions.Server "namesrv"),
	// controller.httpListen for the controller ("controller").
	FlagHTTPListen = "http-listen"
)

// ServerNamesrv is LoadOptions.Server for `ferry namesrv`.
const ServerNamesrv = "namesrv"

// ServerController is LoadOptions.Server for `ferry controller`.
const ServerController = "controller"

// flagBinding ties a flag to the key it sets.
type flagBinding struct {
	name, key string
}

// flagBindings are the flags and their keys when server (LoadOptions.Server) runs.
func flagBindings(server string) []flagBinding {
	httpKey := "broker.httpListen"
	switch server {
	case ServerNamesrv:
		httpKey = "namesrv.httpListen"
	case ServerController:
		httpKey = "controller.httpListen"
	}
	return []flagBinding{
		{FlagDataDir, "broker.dataDir"},
		{FlagNamesrvListen, "namesrv.listen"},
		{FlagBrokerListen, "broker.listen"},
		{FlagNamesrvAddr, "broker.namesrvAddrs"},
		{FlagLogLevel, "log.level"},
		{FlagHTTPListen, httpKey},
	}
}

// FlagKeys maps each flag registered by BindFlags, except --config, to the
// key it overrides:
//
//	--data-dir        broker.dataDir
//	--namesrv-listen  namesrv.listen
//	--broker-listen   broker.listen
//	--namesrv-addr    broker.namesrvAddrs
//	--log-level       log.level
//	--http-listen     broker.httpListen (namesrv.httpListen for ferry namesrv,
//	                  controller.httpListen for ferry controller)
func FlagKeys() map[string]string {
	m := map[string]string{}
	for _, b := range flagBindings("") {
		m[b.name] = b.key
	}
	return m
}

// BindFlags registers the stable flags of the ferry command on fs: --config
// and the flags listed by FlagKeys. Pass fs to Load as LoadOptions.Flags; a
// flag overrides the file and the environment only when it was set on the
// command line, so the defaults shown in help never mask a config file.
func BindFlags(fs *pflag.FlagSet) {
	d := DefaultConfig()
	fs.String(FlagConfig, "", "YAML config file (env "+ConfigFileEnv+")")
	fs.String(FlagDataDir, d.Broker.DataDir, "broker store directory (broker.dataDir)")
	fs.String(FlagNamesrvListen, d.NameServer.Listen, "name server listen address host:port (namesrv.listen)")
	fs.String(FlagBrokerListen, d.Broker.Listen, "broker listen address host:port (broker.listen)")
	fs.StringSlice(FlagNamesrvAddr, d.Broker.NamesrvAddrs,
		"name server addresses the broker registers with, separated by ',' or ';' (broker.namesrvAddrs)")
	fs.String(FlagLogLevel, d.Log.Level, "log level: "+strings.Join(logging.LevelNames[:], ", ")+" (log.level)")
	fs.String(FlagHTTPListen, "",
		"HTTP address of /healthz and /readyz, empty = off; standalone default 127.0.0.1:9880 (broker.httpListen; namesrv.httpListen for ferry namesrv, controller.httpListen for ferry controller)")
}
