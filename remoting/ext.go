package remoting

import (
	"iter"
	"slices"
)

// ExtField is one field of a command's custom header.
type ExtField struct {
	Key, Value string
}

// Ext is a command's custom header (RocketMQ's extFields): request-specific string
// fields. It is a short slice rather than a map: a header has a handful of fields, a
// lookup scans them faster than a map hashes, and a decoded or encoded header needs no
// allocation of its own (a Command carries room for extInline fields). Keys are unique:
// Set replaces, and the decoders keep the last of repeated keys, as a map would.
type Ext []ExtField

// extInline is how many fields a Command holds without allocating.
const extInline = 16

// ExtOf returns an Ext holding m's fields, sorted by key (tests and tools; the hot paths
// build an Ext directly).
func ExtOf(m map[string]string) Ext {
	if len(m) == 0 {
		return nil
	}
	e := make(Ext, 0, len(m))
	for k, v := range m {
		e = append(e, ExtField{k, v})
	}
	slices.SortFunc(e, func(a, b ExtField) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return e
}

// Get returns the value of key and whether it is present.
func (e Ext) Get(key string) (string, bool) {
	for i := range e {
		if len(e[i].Key) == len(key) && e[i].Key == key {
			return e[i].Value, true
		}
	}
	return "", false
}

// Value returns the value of key, or "" when it is absent.
func (e Ext) Value(key string) string {
	v, _ := e.Get(key)
	return v
}

// Len is the number of fields.
func (e Ext) Len() int { return len(e) }

// All iterates over the fields in order.
func (e Ext) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, f := range e {
			if !yield(f.Key, f.Value) {
				return
			}
		}
	}
}

// Map returns the fields as a new map (logs and tests).
func (e Ext) Map() map[string]string {
	m := make(map[string]string, len(e))
	for _, f := range e {
		m[f.Key] = f.Value
	}
	return m
}

// Set sets key to value, replacing an existing field of that key.
func (e *Ext) Set(key, value string) {
	s := *e
	for i := range s {
		if len(s[i].Key) == len(key) && s[i].Key == key {
			s[i].Value = value
			return
		}
	}
	*e = append(s, ExtField{key, value})
}

// Delete removes key's field, if any.
func (e *Ext) Delete(key string) {
	s := *e
	for i := range s {
		if s[i].Key == key {
			*e = append(s[:i], s[i+1:]...)
			return
		}
	}
}
