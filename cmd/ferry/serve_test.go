package main

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeServer is a stopper whose failure the test controls.
type fakeServer struct {
	failed chan struct{}
	err    error
}

func (f *fakeServer) Shutdown(context.Context) error { return nil }
func (f *fakeServer) Failed() <-chan struct{}        { return f.failed }
func (f *fakeServer) ServeErr() error                { return f.err }

// serve's wait ends with the signal (nil) or with whichever server stopped accepting
// connections on its own, so that the process exits for its supervisor to restart it.
func TestWaitFailed(t *testing.T) {
	ns, br := &fakeServer{failed: make(chan struct{})}, &fakeServer{failed: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.Nil(t, waitFailed(ctx, []stopper{ns, br}), "a signal: no failure")

	br.err = errors.New("listener close")
	close(br.failed)
	require.Same(t, br, waitFailed(context.Background(), []stopper{ns, br}), "the broker failed")
	require.Same(t, br, waitFailed(context.Background(), []stopper{br}), "a broker alone")

	ns2 := &fakeServer{failed: make(chan struct{})}
	close(ns2.failed)
	require.Same(t, ns2, waitFailed(context.Background(), []stopper{ns2}), "a name server alone")
}
