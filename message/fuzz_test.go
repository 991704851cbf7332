package message

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordSeeds returns meaningful decoder inputs: valid records of every host
// combination, concatenations, a blank filler, and damaged records. The
// committed corpus under testdata/fuzz/FuzzDecodeRecord holds the same kind
// of inputs.
func recordSeeds(t testing.TB) [][]byte {
	v4 := sampleRecord()
	v6 := sampleRecord()
	v6.BornHost, v6.StoreHost = hostV6, storeV6
	empty := Record{}
	a, b, c := encode(t, &v4), encode(t, &v6), encode(t, &empty)
	badCRC := slices.Clone(a)
	badCRC[PosBodyCRC] ^= 0x10
	mismatch := slices.Clone(a)
	binary.BigEndian.PutUint32(mismatch, uint32(len(a)-1))
	blank := make([]byte, 16)
	_, _ = EncodeBlank(blank, len(blank))
	return [][]byte{a, b, c, append(slices.Clone(a), b...), a[:len(a)-1], badCRC, mismatch, blank, nil}
}

// knownDecodeError reports whether err is one of the decoder's typed errors.
func knownDecodeError(err error) bool {
	for _, e := range []error{ErrTruncated, ErrBadMagic, ErrBlank, ErrSizeMismatch, ErrCorrupt} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzDecodeRecord asserts, for any input:
//   - DecodeRecord never panics and fails only with a typed error, returning
//     the zero Record; a non-zero n on failure comes only with
//     ErrSizeMismatch or ErrCorrupt and equals TOTALSIZE, within
//     [MinRecordSize, len(data)];
//   - on success n == Size() == StoreSize <= len(data), and re-encoding the
//     decoded record reproduces data[:n] byte for byte, except BODYCRC
//     (bytes 8..11), which the encoder recomputes: the bytes are identical
//     exactly when VerifyBodyCRC succeeds;
//   - decoding the re-encoding yields the same record (BodyCRC aside), and
//     the patch helpers write exactly the fields decode reads back.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range recordSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := RecordProperties(data); err != nil {
			require.True(t, knownDecodeError(err), "untyped error %v", err)
		}
		r, n, err := DecodeRecord(data)
		if err != nil {
			require.True(t, knownDecodeError(err), "untyped error %v", err)
			require.Equal(t, Record{}, r)
			if n != 0 {
				require.True(t, errors.Is(err, ErrSizeMismatch) || errors.Is(err, ErrCorrupt), "n=%d with %v", n, err)
				require.GreaterOrEqual(t, n, MinRecordSize)
				require.LessOrEqual(t, n, len(data))
				require.Equal(t, n, int(binary.BigEndian.Uint32(data)))
			}
			return
		}
		require.Equal(t, n, r.Size())
		require.Equal(t, n, int(r.StoreSize))
		require.LessOrEqual(t, n, len(data))
		props, err := RecordProperties(data)
		require.NoError(t, err, "RecordProperties on a record Decode accepts")
		require.Equal(t, r.Properties, props)

		out := make([]byte, n)
		m, err := r.EncodeTo(out)
		require.NoError(t, err)
		require.Equal(t, n, m)
		if r.VerifyBodyCRC() == nil {
			require.Equal(t, data[:n], out)
		} else {
			require.NotEqual(t, data[PosBodyCRC:PosBodyCRC+4], out[PosBodyCRC:PosBodyCRC+4])
			require.Equal(t, data[:PosBodyCRC], out[:PosBodyCRC])
			require.Equal(t, data[PosBodyCRC+4:n], out[PosBodyCRC+4:])
		}
		require.Equal(t, uint32(BodyCRC(r.Body)), binary.BigEndian.Uint32(out[PosBodyCRC:]))

		PutQueueOffset(out, r.QueueOffset+1)
		PutPhysicalOffset(out, r.PhysicalOffset+2)
		PutStoreTimestamp(out, r.StoreTimestamp+3)
		r2, n2, err := DecodeRecord(out)
		require.NoError(t, err)
		require.Equal(t, n, n2)
		require.NoError(t, r2.VerifyBodyCRC())
		r2.BodyCRC = r.BodyCRC
		r2.QueueOffset--
		r2.PhysicalOffset -= 2
		r2.StoreTimestamp -= 3
		require.Equal(t, r, r2)
	})
}

// FuzzParseProperties asserts, for any input:
//   - ParseProperties never panics and yields only encodable pairs (non-empty
//     keys, no separators), each of which LookupProperty finds in the raw
//     input with the same value, while absent keys are not found;
//   - parse -> AppendProperties -> parse is a fixed point, and re-appending
//     the reparsed map gives identical bytes;
//   - RemoveProperty and SetProperty change exactly one key of the parsed
//     map and never modify their input.
func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{
		"",
		"TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01C0A8000100002A9F0000000000001234\x02",
		"a\x01b\x02c\x01d",
		"a\x01b\x01c\x02\x01v\x02k\x01\x02\x02\x02",
		"a\x011\x02a\x012\x02",
		"键\x01值\x02DELAY\x013\x02",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := slices.Clone(data)
		m := ParseProperties(data)
		for k, v := range m {
			require.NoError(t, ValidateProperty(k, v))
			lv, ok := LookupProperty(data, k)
			require.True(t, ok, "key %q", k)
			require.Equal(t, v, string(lv))
		}
		for _, probe := range []string{"", "TAGS", "KEYS", "UNIQ_KEY", "a", "\x01", string(data)} {
			if _, inMap := m[probe]; !inMap {
				_, ok := LookupProperty(data, probe)
				require.False(t, ok, "probe %q", probe)
			}
		}

		enc, err := AppendProperties(nil, m)
		require.NoError(t, err)
		m2 := ParseProperties(enc)
		require.Equal(t, m, m2)
		enc2, err := AppendProperties(nil, m2)
		require.NoError(t, err)
		require.Equal(t, enc, enc2)

		keys := slices.Sorted(maps.Keys(m))
		if len(keys) > 0 {
			want := maps.Clone(m)
			delete(want, keys[0])
			require.Equal(t, want, ParseProperties(RemoveProperty(data, keys[0])))
		}
		set, err := SetProperty(data, "fz", "value")
		require.NoError(t, err)
		want := maps.Clone(m)
		want["fz"] = "value"
		require.Equal(t, want, ParseProperties(set))
		require.Equal(t, orig, data, "input modified")
	})
}
