package protocol

import "github.com/ferrymq/ferry/remoting"

// Header is a typed custom header carried in a command's extFields.
type Header interface {
	// EncodeExt writes the header's fields into ext (setting, not appending, so
	// keys it does not own are left alone). Encode straight into a command's
	// fields, h.EncodeExt(&cmd.ExtFields), to allocate nothing.
	EncodeExt(ext *remoting.Ext)
	// DecodeExt reads the header's fields from ext. A missing required field
	// or an unparsable value gives a *FieldError wrapping ErrMissingField or
	// ErrBadField; unknown keys are ignored.
	DecodeExt(ext remoting.Ext) error
}

// NewExt returns a new Ext holding h's fields.
func NewExt(h Header) remoting.Ext {
	ext := make(remoting.Ext, 0, 16)
	h.EncodeExt(&ext)
	return ext
}

// Keys shared by many headers.
const (
	extTopic         = "topic"
	extQueueID       = "queueId"
	extConsumerGroup = "consumerGroup"
	extBrokerName    = "bname"
)

// NewRequest returns a request for code with h (nil: no fields) encoded straight into
// the command's own fields.
func NewRequest(code RequestCode, h Header) *remoting.Command {
	cmd := remoting.NewRequestExt(int16(code), nil)
	if h != nil {
		h.EncodeExt(&cmd.ExtFields)
	}
	return cmd
}
