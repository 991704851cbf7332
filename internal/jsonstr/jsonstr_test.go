package jsonstr

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// What Append writes, encoding/json reads back as the same string (with invalid UTF-8
// replaced the way encoding/json replaces it).
func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\n\r\t\x00\x01\x02\x1f", "ü标签", "bad\xffutf8\xc3", "</>&"} {
		var got string
		require.NoError(t, json.Unmarshal(Append(nil, s), &got), "%q", s)
		want, err := json.Marshal(s)
		require.NoError(t, err)
		var ref string
		require.NoError(t, json.Unmarshal(want, &ref))
		require.Equal(t, ref, got, "%q", s)
	}
}

func TestAppendAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], "TopicTest\x01a\x02") })
	require.Zero(t, n)
}

func FuzzAppend(f *testing.F) {
	f.Add("a\"b\\c\x01\xff")
	f.Fuzz(func(t *testing.T, s string) {
		var got string
		if err := json.Unmarshal(Append(nil, s), &got); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		want, _ := json.Marshal(s)
		var ref string
		_ = json.Unmarshal(want, &ref)
		if got != ref {
			t.Fatalf("%q: got %q want %q", s, got, ref)
		}
	})
}
