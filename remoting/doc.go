// Package remoting is Ferry's transport: the RocketMQ remoting frame, its three header
// codecs, a server on the cloudwego/netpoll reactor and a portable client on package net.
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
// # Client
//
// One multiplexed connection per address by default (ConnsPerAddr for more), requests
// matched to responses by opaque, synchronous calls bounded by a context or RequestTimeout,
// asynchronous calls with a callback, oneway calls, handlers for server-initiated requests,
// and reconnection on the next call after a connection fails.
package remoting
