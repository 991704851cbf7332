package protocol

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAttributeChanges(t *testing.T) {
	got, err := ParseAttributeChanges("+dedupWindow=10m,-message.type")
	require.NoError(t, err)
	require.Equal(t, []AttributeChange{{Key: "dedupWindow", Value: "10m"}, {Key: "message.type", Delete: true}}, got)
	require.Equal(t, "+dedupWindow=10m,-message.type", FormatAttributeChanges(got))

	none, err := ParseAttributeChanges("")
	require.NoError(t, err)
	require.Empty(t, none)

	for _, bad := range []string{"dedupWindow=10m", "+", "+k", "+k=", "+=v", "-", "-k=v", "+k=v=w", "+k=1,+k=2", "+a=1,,+b=2", ",", "*k=v"} {
		_, err := ParseAttributeChanges(bad)
		require.ErrorIs(t, err, ErrBadAttributes, bad)
	}
}

// FuzzParseAttributeChanges checks that the parser never panics and that what it accepts
// formats back to the same changes.
func FuzzParseAttributeChanges(f *testing.F) {
	for _, s := range []string{"+dedupWindow=10m", "+a=1,-b", "-", "+k=v=w", "+a=1,+a=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseAttributeChanges(s)
		if err != nil {
			require.ErrorIs(t, err, ErrBadAttributes)
			return
		}
		again, err := ParseAttributeChanges(FormatAttributeChanges(got))
		require.NoError(t, err)
		require.Equal(t, got, again)
	})
}
