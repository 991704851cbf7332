package filter

import "bytes"

const (
	nameValueSep = 0x01 // between a property name and its value
	propertySep  = 0x02 // after each name/value pair
	inlineSlots  = 32   // properties resolved up front, in one pass
)

// env holds the property values of one evaluation. It lives on the stack:
// the first inlineSlots property names of an expression are resolved by a
// single pass over the encoded properties; any further ones are looked up
// when used.
type env struct {
	x      *Expr
	props  []byte
	m      map[string]string
	useMap bool
	found  uint32
	vals   [inlineSlots][]byte
}

// scan resolves the inline slots from e.props. Entries are split exactly as
// RocketMQ's MessageDecoder.string2messageProperties does; later duplicates
// overwrite earlier ones.
func (e *env) scan() {
	names := e.x.bname
	if len(names) > inlineSlots {
		names = names[:inlineSlots]
	}
	if len(names) == 0 {
		return
	}
	p := e.props
	for len(p) > 0 {
		end := bytes.IndexByte(p, propertySep)
		if end < 0 {
			end = len(p)
		}
		if name, val, ok := splitEntry(p[:end]); ok {
			for i, n := range names {
				if len(n) == len(name) && bytes.Equal(n, name) {
					e.vals[i] = val
					e.found |= 1 << i
					break
				}
			}
		}
		if end == len(p) {
			break
		}
		p = p[end+1:]
	}
}

// splitEntry splits one name\x01value entry. Like RocketMQ it ignores entries
// with an empty name or an empty value; the value runs from the first \x01
// to the end of the entry.
func splitEntry(seg []byte) (name, val []byte, ok bool) {
	if len(seg) < 3 {
		return nil, nil, false
	}
	k := bytes.IndexByte(seg, nameValueSep)
	if k <= 0 || k >= len(seg)-1 {
		return nil, nil, false
	}
	return seg[:k], seg[k+1:], true
}

// get returns the value of the property in slot, and whether it is present.
func (e *env) get(slot int) ([]byte, bool) {
	if slot < inlineSlots {
		return e.vals[slot], e.found&(1<<slot) != 0
	}
	if e.useMap {
		s, ok := e.m[e.x.names[slot]]
		if !ok {
			return nil, false
		}
		return []byte(s), true
	}
	return lookup(e.props, e.x.bname[slot])
}

// lookup finds the last value of name in encoded properties.
func lookup(p, name []byte) (val []byte, found bool) {
	for len(p) > 0 {
		end := bytes.IndexByte(p, propertySep)
		if end < 0 {
			end = len(p)
		}
		if n, v, ok := splitEntry(p[:end]); ok && bytes.Equal(n, name) {
			val, found = v, true
		}
		if end == len(p) {
			break
		}
		p = p[end+1:]
	}
	return val, found
}
