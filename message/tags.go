package message

import "unicode/utf8"

// JavaHash returns Java's String.hashCode of s: h = 31*h + c over the UTF-16
// code units of s, with int32 wrap-around. Characters outside the Basic
// Multilingual Plane count as two code units (a surrogate pair). Invalid
// UTF-8 is hashed as U+FFFD per invalid byte, as Go decodes it.
func JavaHash(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		h = hashRune(h, r)
		i += size
	}
	return h
}

// JavaHashBytes is JavaHash of the UTF-8 text in b, without converting it to a
// string.
func JavaHashBytes(b []byte) int32 {
	var h int32
	for i := 0; i < len(b); {
		if c := b[i]; c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		h = hashRune(h, r)
		i += size
	}
	return h
}

// hashRune folds one non-ASCII rune into h as one or two UTF-16 code units.
func hashRune(h int32, r rune) int32 {
	if r >= 0x10000 {
		r -= 0x10000
		h = 31*h + int32(0xD800+(r>>10))
		return 31*h + int32(0xDC00+(r&0x3FF))
	}
	return 31*h + int32(r)
}

// TagsHash returns the tags code stored in consume-queue units for tag:
// JavaHash(tag) sign-extended to int64. An empty tag hashes to 0.
func TagsHash(tag string) int64 { return int64(JavaHash(tag)) }

// TagsHashBytes is TagsHash of a tag held as bytes (for example a value
// returned by LookupProperty), without allocating.
func TagsHashBytes(tag []byte) int64 { return int64(JavaHashBytes(tag)) }
