package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ferrymq/ferry/internal/jsonstr"
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
	return quoteKeys(data, func(data []byte, i int) int {
		if c := data[i]; c != '-' && (c < '0' || c > '9') {
			return -1
		}
		j := i + 1
		for j < len(data) && data[j] >= '0' && data[j] <= '9' {
			j++
		}
		return j
	})
}

// quoteKeys copies a JSON text, turning every object key that is not a string
// into one: at each place a key is expected and no string starts, keyEnd
// reports where the key token starting at data[i] ends (-1: not a key it
// rewrites), and data[i:end] is written as a JSON string instead. If nothing
// is rewritten the input slice itself is returned. It tracks only nesting and
// strings, so malformed input passes through for the decoder to reject.
func quoteKeys(data []byte, keyEnd func(data []byte, i int) int) []byte {
	var (
		out       []byte
		copied    int    // data[:copied] has been copied into out
		stack     []byte // open containers: '{' or '['
		expectKey bool   // the next token is an object key
	)
	for i := 0; i < len(data); i++ {
		c := data[i]
		if expectKey && c != '"' && c != '}' && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			if end := keyEnd(data, i); end > i {
				if out == nil {
					out = make([]byte, 0, len(data)+32)
				}
				out = append(out, data[copied:i]...)
				out = jsonstr.Append(out, string(data[i:end]))
				copied = end
				i = end - 1
				expectKey = false
				continue
			}
		}
		switch c {
		case '"':
			i = skipJSONString(data, i) - 1
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
			expectKey = false
		}
	}
	if out == nil {
		return data
	}
	return append(out, data[copied:]...)
}
