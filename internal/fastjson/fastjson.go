// Package fastjson reads the JSON dialect RocketMQ's Java side (Alibaba fastjson) writes
// where it differs from standard JSON: object keys that are not strings. fastjson writes
// the keys of a Map<Integer,…> or Map<Long,…> as bare numbers ({0:12,-1:3}) and the keys
// of a map keyed by a bean as JSON objects ({{"queueId":0}:1}). The functions here turn
// such keys into JSON strings, so encoding/json can decode the text; they are Ferry's one
// key quoter, used for wire bodies (package protocol) and metadata files (consumer
// offsets, delay-level progress).
package fastjson

import "github.com/ferrymq/ferry/internal/jsonstr"

// QuoteBareKeys rewrites object keys written as bare numbers ({0:"a",-1:"b"}) into JSON
// strings ({"0":"a","-1":"b"}). A bare key is a '-' or a digit followed by digits.
// Everything else is copied unchanged; if nothing needs rewriting the input slice itself
// is returned. Malformed input is left for the JSON decoder to reject.
func QuoteBareKeys(data []byte) []byte {
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

// QuoteObjectKeys rewrites object keys written as JSON objects ({{"queueId":0}:1}) into
// JSON strings holding the object's text ({"{\"queueId\":0}":1}). Everything else is
// copied unchanged; if nothing needs rewriting the input slice itself is returned.
// Malformed input is left for the JSON decoder to reject.
func QuoteObjectKeys(data []byte) []byte {
	return quoteKeys(data, func(data []byte, i int) int {
		if data[i] != '{' {
			return -1
		}
		return matchObject(data, i)
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
			i = skipString(data, i) - 1
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

// skipString returns the index just past the string literal starting with the quote at
// data[i] (len(data) if it is unterminated).
func skipString(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// matchObject returns the index just past the '}' closing the object that starts with
// the '{' at data[i], or -1 if it is not closed.
func matchObject(data []byte, i int) int {
	depth := 0
	for ; i < len(data); i++ {
		switch data[i] {
		case '"':
			i = skipString(data, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}
