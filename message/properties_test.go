package message

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseProperties(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"one pair", "TAGS\x01TagA\x02", map[string]string{"TAGS": "TagA"}},
		{"missing final terminator", "a\x01b\x02c\x01d", map[string]string{"a": "b", "c": "d"}},
		{"empty value", "k\x01\x02", map[string]string{"k": ""}},
		{"no separator skipped", "junk\x02a\x01b\x02", map[string]string{"a": "b"}},
		{"two separators skipped", "a\x01b\x01c\x02d\x01e\x02", map[string]string{"d": "e"}},
		{"empty key skipped", "\x01v\x02\x01\x02x\x01y\x02", map[string]string{"x": "y"}},
		{"empty fragments", "\x02\x02a\x01b\x02\x02", map[string]string{"a": "b"}},
		{"last duplicate wins", "a\x011\x02a\x012\x02", map[string]string{"a": "2"}},
		{"utf8", "键\x01值 é\x02", map[string]string{"键": "值 é"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ParseProperties([]byte(tc.in))
			require.Equal(t, tc.want, got)
			for k, v := range tc.want {
				lv, ok := LookupProperty([]byte(tc.in), k)
				require.True(t, ok, k)
				require.Equal(t, v, string(lv))
			}
		})
	}
}

func TestLookupProperty(t *testing.T) {
	props := []byte("TAGS\x01TagA\x02KEYS\x01k1 k2\x02TAGSX\x01no\x02T\x01short\x02bad\x01x\x01y\x02")
	for _, tc := range []struct {
		key  string
		want string
		ok   bool
	}{
		{"TAGS", "TagA", true},
		{"KEYS", "k1 k2", true},
		{"TAGSX", "no", true},
		{"T", "short", true},
		{"TAG", "", false},
		{"bad", "", false},
		{"", "", false},
		{"missing", "", false},
		{"TAGS\x01TagA", "", false},
	} {
		v, ok := LookupProperty(props, tc.key)
		require.Equal(t, tc.ok, ok, tc.key)
		require.Equal(t, tc.want, string(v), tc.key)
	}
	v, ok := LookupProperty([]byte("k\x01\x02"), "k")
	require.True(t, ok)
	require.Empty(t, v)
	_, ok = LookupProperty(nil, "k")
	require.False(t, ok)
	// Values are clipped: appending to one does not clobber props.
	v, _ = LookupProperty(props, "TAGS")
	_ = append(v, 'Z')
	require.Equal(t, byte(0x02), props[9])
}

func TestPropertyPairs(t *testing.T) {
	var keys, values []string
	for k, v := range PropertyPairs([]byte("a\x011\x02bad\x02b\x012\x02a\x013\x02")) {
		keys = append(keys, string(k))
		values = append(values, string(v))
	}
	require.Equal(t, []string{"a", "b", "a"}, keys)
	require.Equal(t, []string{"1", "2", "3"}, values)
	n := 0
	for range PropertyPairs([]byte("a\x011\x02b\x012\x02")) {
		n++
		break
	}
	require.Equal(t, 1, n)
}

func TestAppendProperties(t *testing.T) {
	m := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ID", "A": ""}
	b, err := AppendProperties([]byte("pre"), m)
	require.NoError(t, err)
	require.Equal(t, "preA\x01\x02KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01ID\x02", string(b))
	require.Equal(t, m, ParseProperties(b[3:]))
	enc, err := EncodeProperties(m)
	require.NoError(t, err)
	require.Equal(t, b[3:], enc)

	empty, err := EncodeProperties(nil)
	require.NoError(t, err)
	require.Empty(t, empty)

	for _, bad := range []map[string]string{
		{"": "v"},
		{"k\x01": "v"},
		{"k\x02": "v"},
		{"k": "v\x01"},
		{"k": "v\x02"},
	} {
		out, err := AppendProperties([]byte("keep"), bad)
		require.ErrorIs(t, err, ErrInvalidProperty)
		require.Equal(t, "keep", string(out))
	}
	out, err := AppendProperty([]byte("x"), "k", "v")
	require.NoError(t, err)
	require.Equal(t, "xk\x01v\x02", string(out))
	out, err = AppendProperty([]byte("x"), "k", "v\x02")
	require.ErrorIs(t, err, ErrInvalidProperty)
	require.Equal(t, "x", string(out))
}

func TestSetRemoveProperty(t *testing.T) {
	props := []byte("a\x011\x02junk\x02WAIT\x01true\x02b\x012\x02WAIT\x01false")
	orig := slices.Clone(props)

	removed := RemoveProperty(props, PropertyWaitStoreMsgOK)
	require.Equal(t, "a\x011\x02b\x012\x02", string(removed))
	require.Equal(t, orig, props, "input untouched")
	require.Equal(t, "a\x011\x02WAIT\x01true\x02b\x012\x02WAIT\x01false\x02",
		string(RemoveProperty(props, "missing")), "normalised: junk dropped, last pair terminated")

	set, err := SetProperty(props, "a", "9")
	require.NoError(t, err)
	require.Equal(t, "WAIT\x01true\x02b\x012\x02WAIT\x01false\x02a\x019\x02", string(set))
	require.Equal(t, map[string]string{"a": "9", "b": "2", "WAIT": "false"}, ParseProperties(set))
	require.Equal(t, orig, props, "input untouched")

	_, err = SetProperty(props, "", "v")
	require.ErrorIs(t, err, ErrInvalidProperty)
	out, err := AppendWithProperty([]byte("d"), props, "k", "\x01")
	require.ErrorIs(t, err, ErrInvalidProperty)
	require.Equal(t, "d", string(out))

	set, err = SetProperty(nil, PropertyRealTopic, "T")
	require.NoError(t, err)
	require.Equal(t, "REAL_TOPIC\x01T\x02", string(set))
	require.Empty(t, RemoveProperty(nil, "x"))
}

func TestKeys(t *testing.T) {
	var words []string
	for w := range KeyWords([]byte("  k1 k2  k3 ")) {
		words = append(words, string(w))
	}
	require.Equal(t, []string{"k1", "k2", "k3"}, words)
	for range KeyWords(nil) {
		t.Fatal("no words expected")
	}
	n := 0
	for range KeyWords([]byte("a b c")) {
		n++
		if n == 2 {
			break
		}
	}
	require.Equal(t, 2, n)
	require.Equal(t, []string{"k1", "k2", "k3"}, SplitKeys("  k1 k2  k3 "))
	require.Nil(t, SplitKeys(""))
}

func TestValidateProperty(t *testing.T) {
	require.NoError(t, ValidateProperty("k", ""))
	require.NoError(t, ValidateProperty("k", "v w"))
	require.ErrorIs(t, ValidateProperty("", "v"), ErrInvalidProperty)
	require.ErrorIs(t, ValidateProperty("a\x02", "v"), ErrInvalidProperty)
	require.ErrorIs(t, ValidateProperty("a", "\x01"), ErrInvalidProperty)
}

func TestLookupDoesNotAllocate(t *testing.T) {
	props, err := EncodeProperties(map[string]string{
		PropertyTags: "TagA", PropertyKeys: "k1 k2", PropertyUniqKey: "ID", PropertyDelayLevel: "3",
	})
	require.NoError(t, err)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		for _, k := range []string{PropertyTags, PropertyKeys, PropertyUniqKey, PropertyDelayLevel, "missing"} {
			_, _ = LookupProperty(props, k)
		}
		for w := range KeyWords(props) {
			_ = w
		}
		for k, v := range PropertyPairs(props) {
			_, _ = k, v
		}
	}))
	require.Len(t, slices.Collect(maps.Keys(ParseProperties(props))), 4)
}
