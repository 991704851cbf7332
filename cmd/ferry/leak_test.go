package main

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ferrymq/ferry/internal/leaktest"
	"github.com/ferrymq/ferry/internal/testkit"
)

// TestMain fails the package's tests if any of them leaves a goroutine running (the pprof
// server's serving goroutine among them); the ignored ones are netpoll's pollers, which
// an in-process server starts once per process and never stops. testkit.Main removes the
// ferry program the process tests build.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(testkit.Main(m), leaktest.Netpoll()...)
}
