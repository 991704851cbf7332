package remoting

import (
	"context"
	"net"
	"time"
)

// TestingT is the part of testing.TB that ServeTest uses; *testing.T and *testing.B
// have it. (Package remoting does not import package testing.)
type TestingT interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
	Cleanup(func())
}

// TestService is a server ServeTest runs: a remoting Server, or one built on it (the
// name server, the broker).
type TestService interface {
	Start(ln net.Listener) error
	Shutdown(ctx context.Context) error
}

// ServeTest is for tests, of this package and of the ones above it: it starts s on ln,
// or on a new 127.0.0.1:0 listener when ln is nil, and returns the address s serves;
// when the test ends it shuts s down (allowing 5 s), failing the test should that fail.
func ServeTest(tb TestingT, s TestService, ln net.Listener) string {
	tb.Helper()
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			tb.Fatalf("listen: %v", err)
		}
	}
	addr := ln.Addr().String()
	if err := s.Start(ln); err != nil {
		_ = ln.Close()
		tb.Fatalf("start server on %s: %v", addr, err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			tb.Errorf("shut down server on %s: %v", addr, err)
		}
	})
	return addr
}
