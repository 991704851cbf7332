// Package jsonstr is Ferry's one JSON string escaper, shared by the remoting JSON header
// codec and the protocol's hand-written JSON bodies.
package jsonstr

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// Append appends s to dst as a quoted JSON string: quotes and backslashes are escaped,
// control characters written as \n, \r, \t or \u00XX, and invalid UTF-8 replaced by
// \ufffd, exactly as encoding/json decodes it (so what Ferry writes is what a reader
// using encoding/json, such as the official Go client, sees). Other bytes, multi-byte
// UTF-8 included, are copied as they are, and an ASCII string without specials is one
// copy.
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
