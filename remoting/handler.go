package remoting

import "context"

// Channel is one connection as seen by a Handler: the peer that sent the request. The
// server's connections and the client's connections both implement it, so the broker can
// call a producer back (transaction check) and a client can answer the broker.
type Channel interface {
	// ID is unique among the channels of one Server or Client.
	ID() uint64
	// RemoteAddr is the peer's "ip:port".
	RemoteAddr() string
	// LocalAddr is this side's "ip:port".
	LocalAddr() string
	// Reply sends resp as the response to req: it copies req's opaque and serialize type
	// and sets the response flag. Handlers that returned (nil, nil) use it to answer later
	// (a held long poll); a reply to a oneway request is dropped.
	Reply(req, resp *Command) error
	// Invoke sends a request to the peer and waits for its response or ctx's end. The
	// request is encoded with the serialize type the peer last used.
	Invoke(ctx context.Context, req *Command) (*Command, error)
	// InvokeOneway sends a request with the oneway flag and does not wait.
	InvokeOneway(ctx context.Context, req *Command) error
	// Close closes the connection.
	Close() error
}

// Handler serves the requests of one request code.
//
// It returns the response, or an error (a *CodeError picks the response code; any other
// error is answered with SYSTEM_ERROR), or (nil, nil) to answer later through
// Channel.Reply. Nothing is sent for oneway requests whatever it returns. A handler may run
// concurrently with others from the same connection.
type Handler interface {
	ServeRequest(ctx context.Context, ch Channel, req *Command) (*Command, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ch Channel, req *Command) (*Command, error)

// ServeRequest calls f.
func (f HandlerFunc) ServeRequest(ctx context.Context, ch Channel, req *Command) (*Command, error) {
	return f(ctx, ch, req)
}

// prepareReply fills in the response fields that come from the request.
func prepareReply(req, resp *Command) {
	resp.Opaque = req.Opaque
	resp.Flag |= FlagResponse
	resp.SerializeType = req.SerializeType
}
