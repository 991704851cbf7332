// Package remoting is Ferry's transport: the RocketMQ remoting frame, its three header
// codecs, a server on the cloudwego/netpoll reactor (with optional TLS, served on package
// net) and a portable client on package net.
// It knows no request codes beyond the three it answers on its own (SYSTEM_ERROR,
// SYSTEM_BUSY, REQUEST_CODE_NOT_SUPPORTED); package protocol gives codes their meaning.
//
// # Frames
//
// A frame is `length | serializeType<<24 | headerLen | header | body` (see frame.go). The
// header is JSON (type 0, what the official clients send), RocketMQ binary (type 1) or
// msgpack (type 2, Ferry's own client). A response always uses its request's type, and a
// server-initiated request uses the type the peer last sent, so type 2 only ever reaches a
// peer that spoke it first. The frame length is checked against a limit before anything
// is allocated for the frame.
//
// # Server
//
// Each connection's frames are decoded on its reactor goroutine and handed to the worker
// pool registered for their code (one pool per request class), so the requests of one
// connection run concurrently and are answered out of order; a full pool answers
// SYSTEM_BUSY at once. Frames are read incrementally into the server's own buffers, and the
// bytes of frames being received, queued or handled are bounded per connection and in total
// (MaxConnRequestBytes, MaxRequestBytes): a frame over either is answered SYSTEM_BUSY from its
// header and its body is discarded unread (server_read.go). A handler returns its response, an error, or nothing to answer later
// through Channel.Reply (long polling). Responses from many workers are coalesced into one
// socket write (outqueue.go). The server can call its clients back (Channel.Invoke), closes
// connections idle for IdleTimeout, closes a connection that sends a malformed frame (with a
// log line, nothing else affected), and shuts down by refusing new requests, draining the
// ones in flight, then closing every connection.
//
// Every socket the server accepts, on any path (the reactor's listener, a TLS port's std
// accept loop, a permissive port's handoff to the reactor), has TCP_NODELAY, so a small
// response written right after another does not wait for the peer's delayed
// acknowledgement; a socket where it cannot be set is served with a warning (nodelay.go).
//
// # TLS
//
// ServerOptions.TLS selects RocketMQ's tls.server.mode (ParseTLSMode reads its names):
// TLSDisabled (nil, the default) serves plain frames only and closes a TLS handshake with a
// log line naming ErrTLSNotEnabled; TLSPermissive serves TLS and plain connections on one
// port, told apart by the first byte (0x16 starts a TLS handshake record; a frame starts
// with the high byte of its length, 0 for any frame under 16 MiB); TLSEnforcing serves TLS
// only and closes a plain connection with a log line naming ErrTLSRequired. The
// certificate, and whether clients must present one, come from a tls.Config (see
// LoadServerTLS); TLSState reports a connection's TLS state, the client's certificate
// included. ClientOptions.TLS makes the client dial TLS; the official clients' TLS option
// is a handshake with InsecureSkipVerify.
//
// netpoll has no TLS, so a TLS port's listener is served by one std accept loop
// (server_std.go) that gives each new socket a goroutine. That goroutine routes the socket
// within TLSConfig.HandshakeTimeout, counted from accept: a permissive port peeks at the
// first byte (MSG_PEEK, so nothing is consumed) and hands a plain socket to the netpoll
// reactor, where it is served exactly as on a plain port (handoff_unix.go: the descriptor
// is duplicated and "accepted" by the reactor from a pipe-backed netpoll.Listener); a TLS
// socket completes its handshake and is then read by the same goroutine for its lifetime.
// A silent peer, a peer that sends garbage, or a handshake that fails is closed with a log
// line when the timeout passes or the failure shows, and never holds up the accept loop.
// A TLS connection is served by the same code as a reactor connection (frame reader,
// request-bytes budget, pools, Channel, output queue, idle sweeper, Shutdown) over a
// different transport: reads through a small buffer (crypto/tls holds the decrypted
// record), writes coalesced into full records, a write timeout per flush. Closing it
// closes the socket without a close_notify, which could block on a peer that does not
// read; peers see EOF at a record boundary.
//
// The costs, measured on loopback with BenchmarkEchoTransports, BenchmarkConnect and
// BenchmarkIdleConnMemory (bench_tls_test.go): a plain connection of a permissive port is
// served by the reactor exactly as on a plain port (same throughput, 16 KiB per idle
// connection, no goroutine), for a dup and a pipe wake-up at accept, lost in the noise of
// a connect. Serving plain connections on the std path instead would cost a goroutine
// per connection and a choice between memory and large-frame throughput (a 64 KiB buffer:
// about 70 KiB per idle connection; a 4 KiB one: 10 KiB but 2-3 times slower on 256 KiB
// frames), so it is only the fallback for listeners whose connections have no descriptor
// and for platforms without them. A TLS connection costs a goroutine and about 26 KiB
// when idle, its handshake (ECDSA P-256, TLS 1.3) under 1 ms, and its throughput is bounded
// by AES-GCM: about half of plain's request rate, with 1 KiB and 256 KiB bodies alike.
//
// # Client
//
// One multiplexed connection per address by default (ConnsPerAddr for more), requests
// matched to responses by opaque, synchronous calls bounded by a context or RequestTimeout,
// asynchronous calls with a callback, oneway calls, handlers for server-initiated requests,
// and reconnection on the next call after a connection fails. ClientOptions.TLS dials TLS.
package remoting
