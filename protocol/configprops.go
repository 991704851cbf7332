package protocol

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// Configuration properties text: the body of GET_BROKER_CONFIG (26)
// responses, UPDATE_BROKER_CONFIG (25) requests and the name server's
// GET_NAMESRV_CONFIG / UPDATE_NAMESRV_CONFIG (319/318). It is Java's
// java.util.Properties text format: one "key=value" per line. Java brokers
// write it without escaping (MixAll.properties2String) and read it with
// Properties.load, which interprets backslash escapes.

// EncodeConfigProperties writes m as properties text, one "key=value\n" line
// per entry in key order. Characters Properties.load would misread are
// escaped as Properties.store does: backslash, line breaks, tabs, form feeds
// and other control characters everywhere; '=', ':', '#', '!' and spaces in
// keys; a leading space in values; and every non-ASCII character as \uXXXX
// (Properties.load reads bytes as ISO-8859-1). Bytes that are not valid UTF-8
// are written unchanged. Plain "key=value" pairs come out exactly as a Java
// broker writes them.
func EncodeConfigProperties(m map[string]string) []byte {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendPropertiesText(b, k, true)
		b = append(b, '=')
		b = appendPropertiesText(b, m[k], false)
		b = append(b, '\n')
	}
	return b
}

func appendPropertiesText(b []byte, s string, key bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, c) // not UTF-8: pass the byte through
			} else if r > 0xFFFF {
				r1, r2 := utf16.EncodeRune(r)
				b = appendUnicodeEscape(appendUnicodeEscape(b, r1), r2)
			} else {
				b = appendUnicodeEscape(b, r)
			}
			i += size
			continue
		}
		switch {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c == '\f':
			b = append(b, `\f`...)
		case c < 0x20 || c == 0x7f:
			b = appendUnicodeEscape(b, rune(c))
		case c == ' ' && (key || i == 0):
			b = append(b, `\ `...)
		case key && (c == '=' || c == ':' || c == '#' || c == '!'):
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
		i++
	}
	return b
}

func appendUnicodeEscape(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexUpper[r>>12&0xf], hexUpper[r>>8&0xf], hexUpper[r>>4&0xf], hexUpper[r&0xf])
}

const hexUpper = "0123456789ABCDEF"

// DecodeConfigProperties parses properties text as Java's Properties.load
// does: lines end at \n, \r or \r\n; leading blanks (space, tab, form feed)
// are skipped; blank lines and lines starting with '#' or '!' are comments;
// a line ending in an odd number of backslashes continues on the next line;
// the key ends at the first unescaped '=', ':' or blank, optionally followed
// by blanks and one '=' or ':'; escapes \t \n \r \f \uXXXX and \<c> (c
// itself) are interpreted, and UTF-16 surrogate pairs are combined. Bytes
// are otherwise kept as they are (UTF-8 passes through). A later duplicate
// key wins. An empty result is nil. A malformed \uXXXX escape is an error
// wrapping ErrBadBody.
func DecodeConfigProperties(data []byte) (map[string]string, error) {
	var out map[string]string
	for len(data) > 0 {
		var line []byte
		line, data = nextLogicalLine(data)
		if line == nil {
			continue
		}
		keyEnd, valStart := splitPropertiesLine(line)
		key, err := unescapeProperties(line[:keyEnd])
		if err != nil {
			return nil, err
		}
		val, err := unescapeProperties(line[valStart:])
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[key] = val
	}
	return out, nil
}

func isPropertiesBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// nextLogicalLine returns the next logical line of data (continuations
// joined, leading blanks removed) and the rest of data. A nil line means a
// blank or comment line.
func nextLogicalLine(data []byte) (line, rest []byte) {
	first := true
	for {
		i := 0
		for i < len(data) && isPropertiesBlank(data[i]) {
			i++
		}
		data = data[i:]
		end := 0
		for end < len(data) && data[end] != '\n' && data[end] != '\r' {
			end++
		}
		natural := data[:end]
		rest = data[end:]
		if end < len(data) {
			if data[end] == '\r' && end+1 < len(data) && data[end+1] == '\n' {
				rest = data[end+2:]
			} else {
				rest = data[end+1:]
			}
		}
		if first && (len(natural) == 0 || natural[0] == '#' || natural[0] == '!') {
			return nil, rest
		}
		first = false
		slashes := 0
		for j := len(natural) - 1; j >= 0 && natural[j] == '\\'; j-- {
			slashes++
		}
		if slashes%2 == 0 {
			return append(line, natural...), rest
		}
		line = append(line, natural[:len(natural)-1]...)
		if len(rest) == 0 {
			return line, rest
		}
		data = rest
	}
}

// splitPropertiesLine finds the end of the key and the start of the value.
func splitPropertiesLine(line []byte) (keyEnd, valStart int) {
	keyEnd, valStart = len(line), len(line)
	hasSep, escaped := false, false
	for i, c := range line {
		if !escaped && (c == '=' || c == ':') {
			keyEnd, valStart, hasSep = i, i+1, true
			break
		}
		if !escaped && isPropertiesBlank(c) {
			keyEnd, valStart = i, i+1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for valStart < len(line) {
		c := line[valStart]
		if !isPropertiesBlank(c) {
			if hasSep || (c != '=' && c != ':') {
				break
			}
			hasSep = true
		}
		valStart++
	}
	return keyEnd, valStart
}

// unescapeProperties interprets the backslash escapes of s.
func unescapeProperties(s []byte) (string, error) {
	out := make([]byte, 0, len(s))
	var high rune // pending UTF-16 high surrogate, 0 if none
	flush := func() {
		if high != 0 {
			out = utf8.AppendRune(out, utf8.RuneError)
			high = 0
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			flush()
			if c != '\\' {
				out = append(out, c)
			}
			continue
		}
		i++
		c = s[i]
		if c != 'u' {
			flush()
			switch c {
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 'f':
				c = '\f'
			}
			out = append(out, c)
			continue
		}
		if i+4 >= len(s) {
			return "", fmt.Errorf("%w: properties: malformed \\uxxxx escape %.8q", ErrBadBody, s[i-1:])
		}
		var r rune
		for _, h := range s[i+1 : i+5] {
			var d byte
			switch {
			case h >= '0' && h <= '9':
				d = h - '0'
			case h >= 'a' && h <= 'f':
				d = h - 'a' + 10
			case h >= 'A' && h <= 'F':
				d = h - 'A' + 10
			default:
				return "", fmt.Errorf("%w: properties: malformed \\uxxxx escape %.8q", ErrBadBody, s[i-1:i+5])
			}
			r = r<<4 | rune(d)
		}
		i += 4
		switch {
		case utf16.IsSurrogate(r) && r < 0xDC00: // high surrogate
			flush()
			high = r
		case utf16.IsSurrogate(r) && high != 0: // low surrogate completing a pair
			out = utf8.AppendRune(out, utf16.DecodeRune(high, r))
			high = 0
		default:
			flush()
			out = utf8.AppendRune(out, r) // a lone low surrogate becomes U+FFFD
		}
	}
	flush()
	return string(out), nil
}
