package filter

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
)

var fuzzSeeds = []string{
	"a between 0 and 3",
	"TAGS in ('TagA','TagB')",
	"n >= 100 AND color = 'red'",
	"a NOT BETWEEN -1.5 AND 2e3 OR b IS NULL",
	"NOT (a CONTAINS 'x') AND b NOT STARTSWITH 'y' AND c ENDSWITH 'z'",
	"a = 'it''s' OR a <> b OR a > 2147483648 OR a <= 1.5",
	"a = TRUE OR 1 = FALSE OR NULL OR NOT a",
	"a = 1 /* c */ -- x\n AND b IS NOT NULL",
	"((a = 1)) = (b = 2)",
	"a = --1",
	"a = 1 )",
	"a = 'x",
	"a > 0.0",
	"$x_1 = 5L",
}

// fuzzProps are encoded property strings every compiled expression is run on.
var fuzzProps = [][]byte{
	nil,
	[]byte("a\x011\x02b\x012\x02c\x01x\x02n\x01100\x02color\x01red\x02TAGS\x01TagA"),
	[]byte("a\x01abc\x02b\x01abc\x02c\x01NaN\x02TAGS\x01TagC\x02"),
	[]byte("a\x01 2.5d \x02b\x01-7\x02c\x01true\x02n\x019223372036854775807\x02"),
	[]byte("a\x01\x02\x01b\x02\x02\x02a\x01\x01\x01\x02c\x01٣"),
}

// decodeProps decodes encoded properties the way RocketMQ's
// MessageDecoder.string2messageProperties does, independently of props.go.
func decodeProps(p []byte) map[string]string {
	m := map[string]string{}
	for _, seg := range strings.Split(string(p), "\x02") {
		k := strings.IndexByte(seg, '\x01')
		if len(seg) >= 3 && k > 0 && k < len(seg)-1 {
			m[seg[:k]] = seg[k+1:]
		}
	}
	return m
}

func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, err := Compile(s)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Compile(%q): error %v does not wrap ErrSyntax", s, err)
			}
			return
		}
		if x.String() != s {
			t.Fatalf("String() = %q, want %q", x.String(), s)
		}
		y, err := Compile(x.String())
		if err != nil {
			t.Fatalf("Compile(String()) of %q: %v", s, err)
		}
		for _, p := range fuzzProps {
			got := x.Match(p)
			if got != y.Match(p) {
				t.Fatalf("%q: recompiled expression disagrees on %q", s, p)
			}
			if m := x.MatchMap(decodeProps(p)); m != got {
				t.Fatalf("%q: Match(%q) = %v but MatchMap = %v", s, p, got, m)
			}
		}
	})
}

func FuzzMatch(f *testing.F) {
	exprs := []string{
		"a between 0 and 3",
		"TAGS in ('TagA','TagB')",
		"n >= 100 AND color = 'red'",
		"a > b OR a = 1.5 OR a = 7 OR a = 3000000000",
		"a IS NULL OR b CONTAINS 'x' OR c NOT ENDSWITH 'y'",
		"NOT (a = 'x') AND b <> c",
		"a = TRUE OR b < -0.5",
	}
	var many []string
	for i := 0; i < inlineSlots+4; i++ {
		many = append(many, "p"+strconv.Itoa(i)+" = '"+strconv.Itoa(i)+"'")
	}
	exprs = append(exprs, strings.Join(many, " OR "))
	compiled := make([]*Expr, len(exprs))
	for i, s := range exprs {
		x, err := Compile(s)
		if err != nil {
			f.Fatal(err)
		}
		compiled[i] = x
	}
	for _, p := range fuzzProps {
		f.Add(p)
	}
	f.Add([]byte("p35\x0135\x02a\x012"))
	f.Fuzz(func(t *testing.T, p []byte) {
		orig := bytes.Clone(p)
		m := decodeProps(p)
		for i, x := range compiled {
			if got, want := x.Match(p), x.MatchMap(m); got != want {
				t.Fatalf("%q: Match(%q) = %v, MatchMap(%q) = %v", exprs[i], p, got, m, want)
			}
		}
		if !bytes.Equal(orig, p) {
			t.Fatal("Match modified its input")
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	x, err := Compile("n >= 100 AND color = 'red' AND TAGS IN ('TagA', 'TagB') " +
		"AND price BETWEEN 1.5 AND 99.9 AND gone IS NULL")
	if err != nil {
		b.Fatal(err)
	}
	p := props("UNIQ_KEY", "7F0000015F4B18B4AAC26A1E4E5A0000", "KEYS", "order-42",
		"TAGS", "TagB", "WAIT", "true", "n", "150", "color", "red", "price", "12.50",
		"CLUSTER", "DefaultCluster", "MIN_OFFSET", "0", "MAX_OFFSET", "12")
	if !x.Match(p) {
		b.Fatal("no match")
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		x.Match(p)
	}
}
