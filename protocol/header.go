package protocol

// Header is a typed custom header carried in a command's extFields.
type Header interface {
	// EncodeExt writes the header's fields into ext, which must not be nil.
	// Keys it does not own are left alone, so a caller may reuse a map.
	EncodeExt(ext map[string]string)
	// DecodeExt reads the header's fields from ext. A missing required field
	// or an unparsable value gives a *FieldError wrapping ErrMissingField or
	// ErrBadField; unknown keys are ignored.
	DecodeExt(ext map[string]string) error
}

// NewExt returns a fresh extFields map holding h's fields.
func NewExt(h Header) map[string]string {
	ext := make(map[string]string, 16)
	h.EncodeExt(ext)
	return ext
}

// Keys shared by many headers.
const (
	extTopic         = "topic"
	extQueueID       = "queueId"
	extConsumerGroup = "consumerGroup"
	extBrokerName    = "bname"
)
