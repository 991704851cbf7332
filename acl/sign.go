package acl

import "github.com/ferrymq/ferry/acl/sign"

// Credentials are an account's keys as a client holds them (sign.Credentials): what the
// broker signs its requests to name servers and controllers with.
type Credentials = sign.Credentials

// Field is one ext field of a request (sign.Field, which is remoting.ExtField), so a
// remoting.Ext can be passed as a []Field without copying.
type Field = sign.Field

// scratch is the per-check working memory, pooled by the ACL.
type scratch struct {
	idx []int32 // field indexes sorted by key
	buf []byte  // signed content (field values)
}

// sortFields fills s.idx with fields' indexes sorted by key and returns the first
// repeated key, if any.
func (s *scratch) sortFields(fields []Field) (dup string, ok bool) {
	s.idx = s.idx[:0]
	for i := range fields {
		s.idx = append(s.idx, int32(i))
	}
	sign.SortIndex(fields, s.idx)
	for i := 1; i < len(s.idx); i++ {
		if k := fields[s.idx[i]].Key; k == fields[s.idx[i-1]].Key {
			return k, false
		}
	}
	return "", true
}

// content builds the signed field values in s.buf (the body is hashed separately):
// every field but Signature in key order, optionally without _UNIQUE_KEY_QUERY and
// SecurityToken.
func (s *scratch) content(fields []Field, skipUniqueKey, skipToken bool) []byte {
	s.buf = s.buf[:0]
	for _, i := range s.idx {
		f := &fields[i]
		switch {
		case f.Key == sign.FieldSignature,
			skipUniqueKey && f.Key == uniqueKeyQueryField,
			skipToken && f.Key == sign.FieldSecurityToken:
			continue
		}
		s.buf = append(s.buf, f.Value...)
	}
	return s.buf
}
