package testkit

import (
	"net"
	"sync"
	"testing"
)

// handedOut holds the addresses FreeAddr returned: the kernel may give a port that was
// just closed out again, and two servers of one test (a broker's listen and HA ports)
// must never get the same one.
var handedOut struct {
	sync.Mutex
	addrs map[string]bool
}

// FreeAddr returns a 127.0.0.1 address whose port was free a moment ago and that no
// earlier call of this process returned, for a server that must be told its address
// before it listens (a child process, a restart on a known port).
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.addrs == nil {
		handedOut.addrs = make(map[string]bool)
	}
	for range 1000 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			tb.Fatal(err)
		}
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr
		}
	}
	tb.Fatal("no unused loopback port in 1000 tries")
	return ""
}
