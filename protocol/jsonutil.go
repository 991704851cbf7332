package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// decodeJSON unmarshals a JSON object body into v. It accepts fastjson's
// bare integer map keys ({0:"a"}) and wraps every failure in ErrBadBody.
func decodeJSON(what string, data []byte, v any) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return fmt.Errorf("%w: %s: empty body", ErrBadBody, what)
	}
	if trimmed[0] != '{' {
		return fmt.Errorf("%w: %s: body is not a JSON object", ErrBadBody, what)
	}
	if err := json.Unmarshal(quoteBareKeys(trimmed), v); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadBody, what, err)
	}
	return nil
}

// quoteBareKeys rewrites object keys written as bare numbers, which fastjson
// emits for Map<Long,…> and Map<Integer,…> ({0:"a",-1:"b"}), into JSON
// strings ({"0":"a","-1":"b"}). Everything else is copied unchanged; if
// nothing needs rewriting the input slice itself is returned. Malformed input
// is left for the JSON decoder to reject.
func quoteBareKeys(data []byte) []byte {
	var (
		out       []byte
		copied    int    // data[:copied] has been copied into out
		stack     []byte // open containers: '{' or '['
		expectKey bool   // the next token is an object key
	)
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch c {
		case '"':
			i++
			for i < len(data) && data[i] != '"' {
				if data[i] == '\\' {
					i++
				}
				i++
			}
			expectKey = false
		case '{':
			stack = append(stack, c)
			expectKey = true
		case '[':
			stack = append(stack, c)
			expectKey = false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		case ' ', '\t', '\r', '\n':
			// whitespace keeps the current expectation
		default:
			if expectKey && (c == '-' || (c >= '0' && c <= '9')) {
				j := i + 1
				for j < len(data) && data[j] >= '0' && data[j] <= '9' {
					j++
				}
				if out == nil {
					out = make([]byte, 0, len(data)+16)
				}
				out = append(out, data[copied:i]...)
				out = append(out, '"')
				out = append(out, data[i:j]...)
				out = append(out, '"')
				copied = j
				i = j - 1
			}
			expectKey = false
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[copied:]...)
}
