// Command ferry runs Ferry's servers: `ferry namesrv`, `ferry broker` and `ferry standalone`
// (a name server and a broker in one process).
//
// Configuration comes from defaults, then the --config YAML file, then FERRY_* environment
// variables, then explicit flags (see package conf). Until the broker lands, the command
// loads and validates the configuration and reports that serving is not available yet.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/logging"
)

// errNotYet is returned by the server modes until the name server and broker exist.
var errNotYet = errors.New("serving is available once the broker lands (issue: name server and broker)")

const usage = `usage: ferry <command> [flags]

commands:
  standalone   name server and broker in one process (data under --data-dir, default ./data)
  namesrv      name server only
  broker       broker only
  config       print the effective configuration keys and exit

flags:
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	fs := pflag.NewFlagSet("ferry", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	conf.BindFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if len(args) == 0 {
		fs.Usage()
		return 2
	}
	mode := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	cfg, err := conf.Load(conf.LoadOptions{Flags: fs})
	if err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	log, err := logging.New(logging.Options{Level: cfg.Log.Level, Format: cfg.Log.Format, Output: stderr})
	if err != nil {
		fmt.Fprintln(stderr, "ferry:", err)
		return 1
	}
	switch mode {
	case "config":
		for _, k := range conf.Keys() {
			fmt.Fprintln(stdout, k)
		}
		return 0
	case "standalone", "namesrv", "broker":
		log.Info().Str("mode", mode).Str("dataDir", cfg.Broker.DataDir).
			Str("namesrv", cfg.NameServer.Listen).Str("broker", cfg.Broker.Listen).Msg("configuration valid")
		fmt.Fprintln(stderr, "ferry:", errNotYet)
		return 3
	default:
		fmt.Fprintf(stderr, "ferry: unknown command %q\n", mode)
		fs.Usage()
		return 2
	}
}
