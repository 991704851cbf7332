package remoting

import (
	"fmt"
	"strconv"
	"sync/atomic"
)

// SerializeType selects the header codec of a frame (byte 4 of the frame).
type SerializeType uint8

// Header codecs. The values are part of the wire format.
const (
	// SerializeJSON is type 0: a JSON object, what the official clients send.
	SerializeJSON SerializeType = 0
	// SerializeRocketMQ is type 1: RocketMQ's compact binary header.
	SerializeRocketMQ SerializeType = 1
	// SerializeMsgpack is type 2: Ferry's native msgpack header. It is never sent to a peer
	// that has not sent it first.
	SerializeMsgpack SerializeType = 2
)

// String returns the codec's name.
func (t SerializeType) String() string {
	switch t {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	case SerializeMsgpack:
		return "MSGPACK"
	default:
		return "SerializeType(" + strconv.Itoa(int(t)) + ")"
	}
}

// valid reports whether t names a codec this package implements.
func (t SerializeType) valid() bool { return t <= SerializeMsgpack }

// LanguageCode identifies the sender's implementation language. It is informational only.
type LanguageCode uint8

// Language codes as numbered by RocketMQ. The values are part of the wire format.
const (
	LanguageJava    LanguageCode = 0
	LanguageCPP     LanguageCode = 1
	LanguageDotNet  LanguageCode = 2
	LanguagePython  LanguageCode = 3
	LanguageDelphi  LanguageCode = 4
	LanguageErlang  LanguageCode = 5
	LanguageRuby    LanguageCode = 6
	LanguageOther   LanguageCode = 7
	LanguageHTTP    LanguageCode = 8
	LanguageGo      LanguageCode = 9
	LanguagePHP     LanguageCode = 10
	LanguageOMS     LanguageCode = 11
	LanguageRust    LanguageCode = 12
	LanguageNodeJS  LanguageCode = 13
	maxLanguageCode              = LanguageNodeJS
)

// languageNames is indexed by LanguageCode; it is never mutated.
var languageNames = [...]string{
	"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER",
	"HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS",
}

// String returns the enum name used in JSON headers ("JAVA", "GO", ...).
func (l LanguageCode) String() string {
	if l <= maxLanguageCode {
		return languageNames[l]
	}
	return languageNames[LanguageOther]
}

// parseLanguage maps a JSON language name to its code; unknown names map to OTHER.
func parseLanguage(s string) LanguageCode {
	for i, n := range languageNames {
		if n == s {
			return LanguageCode(i)
		}
	}
	return LanguageOther
}

// Header flag bits.
const (
	// FlagResponse marks a response (bit 0).
	FlagResponse int32 = 1 << 0
	// FlagOneway marks a request that must not be answered (bit 1).
	FlagOneway int32 = 1 << 1
)

// Response codes the transport itself produces. The full table lives in package protocol;
// these three are needed here because the transport answers with them on its own.
const (
	// CodeSuccess is SUCCESS.
	CodeSuccess int16 = 0
	// CodeSystemError is SYSTEM_ERROR: a handler failed.
	CodeSystemError int16 = 1
	// CodeSystemBusy is SYSTEM_BUSY: a worker pool queue is full or the server is stopping.
	CodeSystemBusy int16 = 2
	// CodeRequestCodeNotSupported is REQUEST_CODE_NOT_SUPPORTED: no handler for the code.
	CodeRequestCodeNotSupported int16 = 3
)

// Version is the version ordinal Ferry puts in the headers it sends (RocketMQ V5_3_3). It
// fits int16 as the official clients require.
const Version int16 = 479

// Command is one remoting frame: a request or a response with its header and body.
//
// A decoded Command's strings and Body may alias the frame buffer it was decoded from; the
// buffer belongs to the Command and is never reused, so they stay valid.
type Command struct {
	// Code is the request code, or the response code in a response.
	Code int16
	// Language is the sender's language (informational).
	Language LanguageCode
	// Version is the sender's version ordinal.
	Version int16
	// Opaque matches a response to its request.
	Opaque int32
	// Flag holds FlagResponse and FlagOneway.
	Flag int32
	// Remark is free text, usually an error description in a response.
	Remark string
	// ExtFields is the custom header: request-specific string fields.
	ExtFields Ext
	// Body is the opaque payload.
	Body []byte
	// BodyVec is written after Body without copying on the server side (for pull bodies
	// that point into mapped files). The slices must stay valid until OnWritten runs.
	BodyVec [][]byte
	// OnWritten, if set, runs once after the frame has been handed to the socket or has
	// failed to be; err is nil on success. It runs for every frame that goes through a
	// connection's output queue: responses written by a Server and requests sent by a
	// Client (whose pooled batch bodies rely on it).
	OnWritten func(err error)
	// SerializeType is the header codec this command arrived with or will be sent with.
	SerializeType SerializeType
	// Seq is the frame's arrival sequence number on its connection, local to this
	// process and never sent: a Server numbers the frames it reads on each connection 1,
	// 2, 3, ... in the order they arrive (requests and responses alike; a frame refused
	// for the request-bytes limit gets no number), as it reads them and before it hands a
	// request to a worker pool. Requests of one connection served concurrently by several
	// workers can thus still be ordered as the peer sent them (the broker applies a
	// connection's offset commits in Seq order). It is 0 in a Command the Server did
	// not read (built locally, or read by a Client). Together with the Channel's ID it
	// identifies a request among all those a Server has read.
	Seq uint64

	// extBuf backs ExtFields for decoded commands and responses, so a header of up to
	// extInline fields costs no allocation of its own.
	extBuf [extInline]ExtField

	// held is the request-bytes budget this decoded frame holds until it is answered.
	held int64
	// frame is the pooled buffer this decoded command points into (framepool.go), or nil.
	frame *[]byte
	// arrived is when a Server with an Observer read this request, in nanoseconds since
	// the server's epoch (monotonic); 0 when not stamped.
	arrived int64

	// reply tracks a served request: replyPending while its handler runs, then
	// replyDeferred or replyDone. A deferred request stays in flight until Reply.
	reply atomic.Int32
}

// Reply states of a served request.
const (
	replyPending int32 = iota
	replyDeferred
	replyDone
)

// NewRequest returns a request with the given code and a copy of the ext fields in m
// (a convenience for tools and tests; see NewRequestExt).
func NewRequest(code int16, m map[string]string) *Command {
	c := NewRequestExt(code, nil)
	for k, v := range m {
		c.ExtFields.Set(k, v)
	}
	return c
}

// NewRequestExt returns a request with the given code whose ext fields are a copy of
// ext (none when nil). A typed header is usually encoded straight into it:
// h.EncodeExt(&cmd.ExtFields).
func NewRequestExt(code int16, ext Ext) *Command {
	c := &Command{Code: code, Language: LanguageGo, Version: Version}
	c.ExtFields = append(c.extBuf[:0], ext...)
	return c
}

// NewResponse returns a response with the given code and remark for req: it copies the
// request's opaque and serialize type and sets FlagResponse.
func NewResponse(req *Command, code int16, remark string) *Command {
	c := &Command{
		Code:          code,
		Language:      LanguageGo,
		Version:       Version,
		Opaque:        req.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		SerializeType: req.SerializeType,
	}
	c.ExtFields = c.extBuf[:0]
	return c
}

// IsResponse reports whether the response flag is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway flag is set.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// Ext returns the ext field named key, or "" when it is absent.
func (c *Command) Ext(key string) string { return c.ExtFields.Value(key) }

// SetExt sets an ext field, creating the map if needed.
func (c *Command) SetExt(key, value string) {
	if c.ExtFields == nil {
		c.ExtFields = c.extBuf[:0]
	}
	c.ExtFields.Set(key, value)
}

// bodyLen is the number of body bytes the frame carries.
func (c *Command) bodyLen() int {
	n := len(c.Body)
	for _, p := range c.BodyVec {
		n += len(p)
	}
	return n
}

// String describes the command for logs (without the body).
func (c *Command) String() string {
	kind := "request"
	if c.IsResponse() {
		kind = "response"
	}
	return fmt.Sprintf("%s{code=%d opaque=%d flag=%d type=%s remark=%q ext=%v body=%dB}",
		kind, c.Code, c.Opaque, c.Flag, c.SerializeType, c.Remark, c.ExtFields.Map(), c.bodyLen())
}

// written runs OnWritten once.
func (c *Command) written(err error) {
	if f := c.OnWritten; f != nil {
		c.OnWritten = nil
		f(err)
	}
}
