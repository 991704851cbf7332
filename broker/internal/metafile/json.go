package metafile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// MarshalIndent renders v as JSON in the layout the broker writes its
// metadata files in: indented with tabs, like RocketMQ's pretty format, and
// ending with a newline.
func MarshalIndent(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "\t")
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	return append(b, '\n'), nil
}

// DecodeObject decodes data, which must hold a JSON object (surrounding
// white space is allowed), into v. prepare, if not nil, rewrites the trimmed
// object first (package offsets quotes fastjson's bare integer keys with
// it). The error is "not a JSON object" or the decoder's error; callers wrap
// it with their own corrupt-file error.
func DecodeObject(data []byte, v any, prepare func([]byte) []byte) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return errors.New("not a JSON object")
	}
	if prepare != nil {
		trimmed = prepare(trimmed)
	}
	return json.Unmarshal(trimmed, v)
}
