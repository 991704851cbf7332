package remoting

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/ferrymq/ferry/internal/jsonstr"
)

// JSON header (serialize type 0), the format every official client sends:
//
//	{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"T"}}
//
// code and version are JSON numbers that fit int16, opaque and flag numbers that fit int32,
// language the enum name as a string, remark a string or null, and extFields an object whose
// values are all strings (the Go client drops a whole frame whose ext values are not
// strings). Unknown fields are skipped. The encoder below writes compact JSON in that exact
// shape and omits remark and extFields when they are empty. Strings are escaped by
// jsonstr.Append; invalid UTF-8 is U+FFFD both ways, as encoding/json has it.
//
// The decoder is hand-written: strings without escapes alias the frame buffer, so a typical
// header costs one allocation (the ext map).

// maxJSONDepth bounds nesting in skipped unknown values.
const maxJSONDepth = 32

// appendJSONHeader appends cmd's header as JSON.
func appendJSONHeader(dst []byte, cmd *Command) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Code), 10)
	dst = append(dst, `,"language":"`...)
	dst = append(dst, cmd.Language.String()...)
	dst = append(dst, `","version":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(cmd.Flag), 10)
	if cmd.Remark != "" {
		dst = append(dst, `,"remark":`...)
		dst = jsonstr.Append(dst, cmd.Remark)
	}
	if len(cmd.ExtFields) > 0 {
		dst = append(dst, `,"extFields":{`...)
		for i, f := range cmd.ExtFields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonstr.Append(dst, f.Key)
			dst = append(dst, ':')
			dst = jsonstr.Append(dst, f.Value)
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// jsonParser is a cursor over one JSON header.
type jsonParser struct {
	b []byte
	i int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: json at byte %d: %s", ErrMalformedHeader, p.i, fmt.Sprintf(format, args...))
}

func (p *jsonParser) skipWS() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte without consuming it (0 at the end).
func (p *jsonParser) peek() byte {
	p.skipWS()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *jsonParser) expect(c byte) error {
	if p.peek() != c {
		return p.errorf("expected %q", c)
	}
	p.i++
	return nil
}

// literal consumes one of true/false/null.
func (p *jsonParser) literal(word string) error {
	if len(p.b)-p.i < len(word) || string(p.b[p.i:p.i+len(word)]) != word {
		return p.errorf("expected %s", word)
	}
	p.i += len(word)
	return nil
}

// str parses a JSON string. Without escapes the result aliases the buffer.
func (p *jsonParser) str() (string, error) {
	if err := p.expect('"'); err != nil {
		return "", err
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if len(s) == 0 {
				return "", nil
			}
			return unsafe.String(&s[0], len(s)), nil
		case c == '\\':
			return p.strEscaped(start)
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				return p.strEscaped(start) // invalid UTF-8 reads as U+FFFD
			}
			p.i += size
			continue
		}
		p.i++
	}
	return "", p.errorf("unterminated string")
}

// strEscaped finishes a string that contains escapes or invalid UTF-8. Like encoding/json
// (and so the official Go client), it reads each byte of invalid UTF-8 as U+FFFD.
//
// The string is unescaped in place, over its own escaped bytes in the header (the frame
// belongs to the decoded command, and every other string decoded from it lies outside
// this string's span): an escape never yields more bytes than it consumed, so the write
// position never passes the read position, and the result aliases the buffer like an
// unescaped string. Only invalid UTF-8 grows (1 byte → 3); its first occurrence moves the
// output to a new buffer.
func (p *jsonParser) strEscaped(start int) (string, error) {
	out := p.b[start:p.i:len(p.b)] // the prefix before the first escape is already in place
	inPlace := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			if len(out) == 0 {
				return "", nil
			}
			return unsafe.String(&out[0], len(out)), nil // never written again
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				if inPlace {
					out = append(make([]byte, 0, len(out)+len(p.b)-start), out...)
					inPlace = false
				}
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, p.b[p.i:p.i+size]...)
			}
			p.i += size
			continue
		case c != '\\':
			out = append(out, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return "", p.errorf("unterminated escape")
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			if utf16.IsSurrogate(r) {
				if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					r2, err := p.hex4()
					if err != nil {
						return "", err
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
					} else {
						p.i = save
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", p.errorf("bad escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *jsonParser) hex4() (rune, error) {
	if len(p.b)-p.i < 4 {
		return 0, p.errorf("short \\u escape")
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.errorf("bad hex digit in \\u escape")
		}
	}
	p.i += 4
	return r, nil
}

// integer parses a JSON integer in [lo, hi]. Fractions and exponents are rejected, as the
// official Go client's decoder does for its integer fields.
func (p *jsonParser) integer(lo, hi int64) (int64, error) {
	p.skipWS()
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	if p.i == digits {
		return 0, p.errorf("expected integer")
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return 0, p.errorf("expected integer, got a fraction or exponent")
		}
	}
	// Parsed by hand rather than with strconv: this runs on the network reactor's
	// short-lived goroutines, where strconv's deeper frames cost a stack growth (a copy)
	// per request. Ten digits bound every int32 and keep the sum from overflowing.
	if p.i-digits > 10 {
		return 0, p.errorf("integer %s out of range [%d, %d]", p.b[start:p.i], lo, hi)
	}
	var v int64
	for _, c := range p.b[digits:p.i] {
		v = v*10 + int64(c-'0')
	}
	if digits > start {
		v = -v
	}
	if v < lo || v > hi {
		return 0, p.errorf("integer %s out of range [%d, %d]", p.b[start:p.i], lo, hi)
	}
	return v, nil
}

// skipValue skips any JSON value, bounding nesting depth.
func (p *jsonParser) skipValue(depth int) error {
	if depth > maxJSONDepth {
		return p.errorf("nesting too deep")
	}
	switch c := p.peek(); c {
	case '"':
		_, err := p.str()
		return err
	case '{', '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		p.i++
		if p.peek() == closer {
			p.i++
			return nil
		}
		for {
			if c == '{' {
				if _, err := p.str(); err != nil {
					return err
				}
				if err := p.expect(':'); err != nil {
					return err
				}
			}
			if err := p.skipValue(depth + 1); err != nil {
				return err
			}
			switch p.peek() {
			case ',':
				p.i++
			case closer:
				p.i++
				return nil
			default:
				return p.errorf("expected ',' or %q", closer)
			}
		}
	case 't':
		return p.literal("true")
	case 'f':
		return p.literal("false")
	case 'n':
		return p.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			p.i++
			for p.i < len(p.b) && (p.b[p.i] >= '0' && p.b[p.i] <= '9' || p.b[p.i] == '.' ||
				p.b[p.i] == 'e' || p.b[p.i] == 'E' || p.b[p.i] == '+' || p.b[p.i] == '-') {
				p.i++
			}
			return nil
		}
		return p.errorf("unexpected %q", c)
	}
}

// nullableStr parses a string or null (null yields "").
func (p *jsonParser) nullableStr() (string, error) {
	if p.peek() == 'n' {
		return "", p.literal("null")
	}
	return p.str()
}

// extFields parses the extFields object (or null), appending its fields to dst.
func (p *jsonParser) extFields(dst Ext) (Ext, error) {
	if p.peek() == 'n' {
		return nil, p.literal("null")
	}
	if err := p.expect('{'); err != nil {
		return nil, err
	}
	if p.peek() == '}' {
		p.i++
		return dst, nil
	}
	m := dst
	for {
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		if c := p.peek(); c != '"' && c != 'n' {
			return nil, p.errorf("extFields value for %q is not a string", k)
		}
		v, err := p.nullableStr()
		if err != nil {
			return nil, err
		}
		m.Set(k, v)
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return m, nil
		default:
			return nil, p.errorf("expected ',' or '}' in extFields")
		}
	}
}

// decodeJSONHeader decodes a JSON header into cmd.
func decodeJSONHeader(b []byte, cmd *Command) error {
	p := jsonParser{b: b}
	if err := p.expect('{'); err != nil {
		return err
	}
	if p.peek() == '}' {
		p.i++
		return p.end()
	}
	for {
		key, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := p.field(key, cmd); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return p.end()
		default:
			return p.errorf("expected ',' or '}'")
		}
	}
}

// end checks that only whitespace follows the header object.
func (p *jsonParser) end() error {
	if p.peek() != 0 || p.i != len(p.b) {
		return p.errorf("trailing data after header")
	}
	return nil
}

// field decodes the value of one top-level header field.
func (p *jsonParser) field(key string, cmd *Command) error {
	var err error
	var v int64
	switch key {
	case "code":
		v, err = p.integer(-1<<15, 1<<15-1)
		cmd.Code = int16(v)
	case "version":
		v, err = p.integer(-1<<15, 1<<15-1)
		cmd.Version = int16(v)
	case "opaque":
		v, err = p.integer(-1<<31, 1<<31-1)
		cmd.Opaque = int32(v)
	case "flag":
		v, err = p.integer(-1<<31, 1<<31-1)
		cmd.Flag = int32(v)
	case "language":
		switch c := p.peek(); {
		case c == '"':
			var s string
			s, err = p.str()
			cmd.Language = parseLanguage(s)
		case c == '-' || (c >= '0' && c <= '9'):
			v, err = p.integer(0, 255)
			cmd.Language = LanguageCode(v)
			if cmd.Language > maxLanguageCode {
				cmd.Language = LanguageOther
			}
		default:
			err = p.skipValue(0)
		}
	case "remark":
		cmd.Remark, err = p.nullableStr()
	case "extFields":
		cmd.ExtFields, err = p.extFields(cmd.extBuf[:0])
	default:
		err = p.skipValue(0)
	}
	return err
}
