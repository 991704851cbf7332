package protocol

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ferrymq/ferry/remoting"
)

// ErrMissingField reports that a required extFields key is absent (or, for a
// numeric or boolean field, empty). It is always wrapped in a [*FieldError].
var ErrMissingField = errors.New("protocol: missing required ext field")

// ErrBadField reports that an extFields value cannot be parsed as the field's
// type. It is always wrapped in a [*FieldError].
var ErrBadField = errors.New("protocol: malformed ext field")

// ErrBadBody reports a command body that is not valid for its type, or a
// value that cannot be encoded safely into a body.
var ErrBadBody = errors.New("protocol: malformed body")

// ErrInvalidName reports a topic or group name that breaks the naming rules.
// It is always wrapped in a [*NameError].
var ErrInvalidName = errors.New("protocol: invalid name")

// FieldError describes one bad extFields entry. Err is [ErrMissingField] or
// [ErrBadField]; errors.Is and errors.As see through it.
type FieldError struct {
	// Field is the extFields key, exactly as it appears on the wire.
	Field string
	// Value is the raw value that failed to parse (empty for a missing field).
	Value string
	// Err is ErrMissingField or ErrBadField.
	Err error
}

// Error implements error.
func (e *FieldError) Error() string {
	if errors.Is(e.Err, ErrMissingField) {
		return fmt.Sprintf("%v %q", e.Err, e.Field)
	}
	return fmt.Sprintf("%v %q: value %q", e.Err, e.Field, truncate(e.Value, 64))
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// truncate shortens s to at most n bytes (on a rune boundary) for messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// extReader decodes typed values from an extFields map and remembers the
// first error, so a DecodeExt body reads as a flat list of fields.
type extReader struct {
	ext remoting.Ext
	err error
}

func (r *extReader) fail(key, val string, err error) {
	if r.err == nil {
		r.err = &FieldError{Field: key, Value: val, Err: err}
	}
}

// scalar returns the raw value of a numeric or boolean field; empty counts
// as absent.
func (r *extReader) scalar(key string, required bool) (string, bool) {
	v, ok := r.ext.Get(key)
	if !ok || v == "" {
		if required {
			r.fail(key, "", ErrMissingField)
		}
		return "", false
	}
	return v, true
}

func (r *extReader) str(key string, required bool) string {
	v, ok := r.ext.Get(key)
	if !ok && required {
		r.fail(key, "", ErrMissingField)
	}
	return v
}

func (r *extReader) int64(key string, required bool) int64 {
	v, ok := r.scalar(key, required)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail(key, v, ErrBadField)
		return 0
	}
	return n
}

func (r *extReader) int32(key string, required bool) int32 {
	v, ok := r.scalar(key, required)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		r.fail(key, v, ErrBadField)
		return 0
	}
	return int32(n)
}

func (r *extReader) boolean(key string, required bool) bool {
	b, _ := r.boolField(key, required)
	return b
}

// boolField parses a "true"/"false" field (any case); present is false when it is
// absent or malformed (the latter recorded as ErrBadField). It allocates nothing.
func (r *extReader) boolField(key string, required bool) (b, present bool) {
	v, ok := r.scalar(key, required)
	if !ok {
		return false, false
	}
	switch {
	case strings.EqualFold(v, "true"):
		return true, true
	case strings.EqualFold(v, "false"):
		return false, true
	}
	r.fail(key, v, ErrBadField)
	return false, false
}

// optBool returns nil when the field is absent.
func (r *extReader) optBool(key string, required bool) *bool {
	b, ok := r.boolField(key, required)
	if !ok {
		return nil
	}
	return &b
}
