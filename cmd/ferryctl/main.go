// Command ferryctl administers and tries out a Ferry cluster; see package tools and
// docs/ferryctl.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ferrymq/ferry/tools"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := tools.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
