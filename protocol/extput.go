package protocol

import (
	"strconv"

	"github.com/ferrymq/ferry/remoting"
)

// Helpers that write extFields values (reading goes through extReader, in
// errors.go); header codecs touch the remoting.Ext only through them.
//
// set* writes a field unconditionally (required fields, and optional fields a
// type documents as always written); put* writes an optional field only when
// it differs from its zero value (or, for pointers, when it is set).

// setStr writes a string field, empty or not.
func setStr(ext *remoting.Ext, key, v string) {
	ext.Set(key, v)
}

// setInt32 writes an int32 field.
func setInt32(ext *remoting.Ext, key string, v int32) {
	ext.Set(key, fmtInt32(v))
}

// setInt64 writes an int64 field.
func setInt64(ext *remoting.Ext, key string, v int64) {
	ext.Set(key, fmtInt64(v))
}

// setBool writes a boolean field as "true" or "false".
func setBool(ext *remoting.Ext, key string, v bool) {
	ext.Set(key, fmtBool(v))
}

// putBool writes an optional boolean field only when it is true.
func putBool(ext *remoting.Ext, key string, v bool) {
	if v {
		setBool(ext, key, true)
	}
}

// putOptInt32 writes an optional int32 field only when it is set.
func putOptInt32(ext *remoting.Ext, key string, v *int32) {
	if v != nil {
		setInt32(ext, key, *v)
	}
}

// putOptInt64 writes an optional int64 field only when it is set.
func putOptInt64(ext *remoting.Ext, key string, v *int64) {
	if v != nil {
		setInt64(ext, key, *v)
	}
}

// optInt32 reads an optional int32 field; nil means absent (or empty).
func (r *extReader) optInt32(key string) *int32 {
	if _, ok := r.scalar(key, false); !ok {
		return nil
	}
	v := r.int32(key, false)
	return &v
}

// optInt64 reads an optional int64 field; nil means absent (or empty).
func (r *extReader) optInt64(key string) *int64 {
	if _, ok := r.scalar(key, false); !ok {
		return nil
	}
	v := r.int64(key, false)
	return &v
}

// encodeOneStr encodes a header whose only field is one required string.
func encodeOneStr(ext *remoting.Ext, key, v string) { setStr(ext, key, v) }

// decodeOneStr decodes a header whose only field is one required string.
func decodeOneStr(ext remoting.Ext, key string) (string, error) {
	r := extReader{ext: ext}
	v := r.str(key, true)
	return v, r.err
}

func fmtInt32(v int32) string { return strconv.FormatInt(int64(v), 10) }
func fmtInt64(v int64) string { return strconv.FormatInt(v, 10) }
func fmtBool(v bool) string   { return strconv.FormatBool(v) }

// putStr writes a string field only when it is non-empty.
func putStr(ext *remoting.Ext, key, v string) {
	if v != "" {
		ext.Set(key, v)
	}
}

// putInt32 writes an optional int32 field only when it is non-zero.
func putInt32(ext *remoting.Ext, key string, v int32) {
	if v != 0 {
		ext.Set(key, fmtInt32(v))
	}
}

// putOptBool writes an optional tri-state boolean only when it is set.
func putOptBool(ext *remoting.Ext, key string, v *bool) {
	if v != nil {
		ext.Set(key, fmtBool(*v))
	}
}
