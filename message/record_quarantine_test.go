package message

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuarantineHeader(t *testing.T) {
	b := make([]byte, 100)
	EncodeQuarantine(b, 60)
	require.Equal(t, 60, QuarantineSize(b))
	require.Equal(t, 0, QuarantineSize(b[:40]), "a range longer than what is left is no header")
	EncodeQuarantine(b, 4)
	require.Equal(t, 0, QuarantineSize(b), "shorter than a header")
	require.Equal(t, 0, QuarantineSize(make([]byte, 100)))
	require.Equal(t, 0, QuarantineSize(b[:7]))
}

func FuzzQuarantineSize(f *testing.F) {
	b := make([]byte, 32)
	EncodeQuarantine(b, 20)
	f.Add(b)
	f.Add([]byte{0, 0, 0, 8, 0xFE, 0x44, 0xA7, 0xE1})
	f.Fuzz(func(t *testing.T, b []byte) {
		n := QuarantineSize(b)
		require.GreaterOrEqual(t, n, 0)
		require.LessOrEqual(t, n, len(b))
		if n > 0 {
			require.GreaterOrEqual(t, n, BlankHeaderSize)
			c := make([]byte, n)
			EncodeQuarantine(c, n)
			require.Equal(t, n, QuarantineSize(c))
		}
	})
}

// TestDecodeIntoReusedRecordClearsEmptyFields decodes a record with a body and properties,
// then one without, into the same Record: nothing of the first may remain.
func TestDecodeIntoReusedRecordClearsEmptyFields(t *testing.T) {
	full := Record{Topic: []byte("T"), Body: []byte("body"), Properties: []byte("a\x01b\x02")}
	empty := Record{Topic: []byte("T")}
	enc := func(r Record) []byte {
		b, err := r.AppendTo(nil)
		require.NoError(t, err)
		return b
	}
	var r Record
	_, err := r.Decode(enc(full))
	require.NoError(t, err)
	require.Equal(t, "body", string(r.Body))
	_, err = r.Decode(enc(empty))
	require.NoError(t, err)
	require.Empty(t, r.Body)
	require.Empty(t, r.Properties)
	require.NoError(t, r.VerifyBodyCRC())
}
