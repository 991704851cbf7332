package filter

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// props encodes name/value pairs as RocketMQ stores message properties.
func props(kv ...string) []byte {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, kv[i]...)
		b = append(b, nameValueSep)
		b = append(b, kv[i+1]...)
		b = append(b, propertySep)
	}
	return b
}

func TestMatch(t *testing.T) {
	tests := []struct {
		name  string
		expr  string
		props []byte
		want  bool
	}{
		// RocketMQ's documented examples.
		{"between in", "a between 0 and 3", props("a", "2"), true},
		{"between low edge", "a between 0 and 3", props("a", "0"), true},
		{"between high edge", "a between 0 and 3", props("a", "3"), true},
		{"between above", "a between 0 and 3", props("a", "4"), false},
		{"between missing", "a between 0 and 3", props("b", "1"), false},
		{"tags in", "TAGS in ('TagA','TagB')", props("TAGS", "TagB"), true},
		{"tags not in list", "TAGS in ('TagA','TagB')", props("TAGS", "TagC"), false},
		{"tags missing", "TAGS in ('TagA','TagB')", nil, false},
		{"and both", "n >= 100 AND color = 'red'", props("n", "150", "color", "red"), true},
		{"and one false", "n >= 100 AND color = 'red'", props("n", "99", "color", "red"), false},
		{"and colour differs", "n >= 100 AND color = 'red'", props("n", "100", "color", "Red"), false},

		// Every operator.
		{"eq string", "a = 'x'", props("a", "x"), true},
		{"eq number", "a = 5", props("a", "5"), true},
		{"ne", "a <> 'x'", props("a", "y"), true},
		{"ne equal", "a <> 'x'", props("a", "x"), false},
		{"lt", "a < 10", props("a", "9"), true},
		{"le", "a <= 10", props("a", "10"), true},
		{"gt", "a > 10", props("a", "10"), false},
		{"ge", "a >= 10", props("a", "10"), true},
		{"not between", "a NOT BETWEEN 1 AND 3", props("a", "4"), true},
		{"not between inside", "a NOT BETWEEN 1 AND 3", props("a", "2"), false},
		{"not in", "a NOT IN ('x', 'y')", props("a", "z"), true},
		{"not in member", "a NOT IN ('x', 'y')", props("a", "x"), false},
		{"is null missing", "a IS NULL", props("b", "1"), true},
		{"is null present", "a IS NULL", props("a", "1"), false},
		{"is not null", "a IS NOT NULL", props("a", "1"), true},
		{"or", "a = 1 OR b = 1", props("b", "1"), true},
		{"not", "NOT (a = 1)", props("a", "2"), true},
		{"contains", "a CONTAINS 'ell'", props("a", "hello"), true},
		{"not contains", "a NOT CONTAINS 'ell'", props("a", "hello"), false},
		{"startswith", "a STARTSWITH 'he'", props("a", "hello"), true},
		{"endswith", "a ENDSWITH 'lo'", props("a", "hello"), true},
		{"not endswith", "a NOT ENDSWITH 'lo'", props("a", "help"), true},
		{"contains empty pattern", "a CONTAINS ''", props("a", "hello"), false},
		{"not contains missing", "a NOT CONTAINS 'x'", nil, false},
		{"not of contains missing", "NOT (a CONTAINS 'x')", nil, true},
		{"unary minus", "a = -5", props("a", "-5"), true},
		{"unary plus", "+a IN ('x')", props("a", "x"), true},
		{"constant true", "TRUE", nil, true},
		{"constant null", "NULL", nil, false},

		// Typing rules.
		{"string to int", "a = 5", props("a", "+5"), true},
		{"int literal wants an integer", "a = 5", props("a", "5.0"), false},
		{"double literal takes an integer", "a = 5.0", props("a", "5"), true},
		{"double parse trims blanks", "a = 5.0", props("a", " 5 "), true},
		{"double parse takes suffix", "a > 4.5", props("a", "5f"), true},
		{"double parse takes hex", "a = 4.0", props("a", "0x1p2"), true},
		{"NaN above everything", "a > 1.0", props("a", "NaN"), true},
		{"int literal overflows int", "a > 5", props("a", "3000000000"), false},
		{"long literal", "a > 2147483648", props("a", "3000000000"), true},
		{"unicode digits", "a = 3", props("a", "٣"), true},
		{"unparsable number", "a > 5", props("a", "abc"), false},
		{"property vs property numeric", "a > b", props("a", "10", "b", "9.5"), true},
		{"property vs property text", "a > b", props("a", "x", "b", "y"), false},
		{"string eq case-sensitive", "a = 'X'", props("a", "x"), false},
		{"bool literal vs string", "a = TRUE", props("a", "tRuE"), true},
		{"bool literal on the left throws", "TRUE = a", props("a", "true"), false},
		{"bare property is false", "a", props("a", "true"), false},
		{"NOT bare property", "NOT a", props("a", "x"), true},
		{"number vs boolean", "1 = TRUE", nil, false},

		// Missing properties and three-valued logic.
		{"missing eq", "a = 'x'", nil, false},
		{"missing ne", "a <> 'x'", nil, false},
		{"missing not eq", "NOT (a = 'x')", nil, false},
		{"missing on right of eq", "'x' <> a", nil, true},
		{"both missing are equal", "a = b", nil, true},
		{"missing lt", "a < 5", nil, false},
		{"null or true", "a = 1 OR TRUE", nil, true},
		{"null and false", "NOT (a = 1 AND FALSE)", nil, true},
		{"null and true", "NOT (a = 1 AND TRUE)", nil, false},
		{"failure aborts or", "a > 5 OR b = 'x'", props("a", "abc", "b", "x"), false},
		{"short circuit avoids failure", "b = 'x' OR a > 5", props("a", "abc", "b", "x"), true},
		{"failure under not", "NOT (a > 5)", props("a", "abc"), false},

		// Precedence: NOT > AND > OR, and NOT binds to its operand only.
		{"and before or", "a = 1 OR b = 1 AND c = 1", props("a", "1"), true},
		{"and before or 2", "a = 1 OR b = 1 AND c = 1", props("b", "1"), false},
		{"parens", "(a = 1 OR b = 1) AND c = 1", props("a", "1"), false},
		{"not before and", "NOT a = 1 AND b = 1", props("a", "2", "b", "1"), false},
		{"not binds to property", "NOT a = 'x'", props("a", "y"), false},
		{"not of comparison", "NOT (a = 'x')", props("a", "y"), true},

		// Syntax details.
		{"keywords ignore case", "a bEtWeEn 1 AnD 3 oR b iS nOt NuLl", props("b", "1"), true},
		{"lowercase literals", "a = true or false", props("a", "TRUE"), true},
		{"quote escape", "a = 'it''s'", props("a", "it's"), true},
		{"in with quote", "a IN ('o''k', 'x')", props("a", "o'k"), true},
		{"identifier chars", "$x_1 = 1", props("$x_1", "1"), true},
		{"long suffix", "a = 5L", props("a", "5"), true},
		{"decimal forms", "a = .5 AND b = 5. AND c = 5e-1", props("a", "0.5", "b", "5", "c", "0.5"), true},
		{"comments", "a = 1 /* c */ AND -- line\n b = 2", props("a", "1", "b", "2"), true},
		{"trailing token ignored", "a = 1 )", props("a", "1"), true},
		{"dash dash without newline is minus minus", "a = --1", props("a", "1"), true},

		// Property encoding.
		{"last duplicate wins", "a = 'y'", []byte("a\x01x\x02a\x01y"), true},
		{"empty value is missing", "a IS NULL", []byte("a\x01\x02b\x011"), true},
		{"value holds separator", "a = 'x\x01y'", []byte("a\x01x\x01y\x02"), true},
		{"no final separator", "b = 2", []byte("a\x011\x02b\x012"), true},
	}
	require.GreaterOrEqual(t, len(tests), 40)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := Compile(tt.expr)
			require.NoError(t, err)
			assert.Equal(t, tt.want, x.Match(tt.props), "Match(%q)", tt.props)
			assert.Equal(t, tt.expr, x.String())
		})
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		expr string
		msg  string // part of the error text
	}{
		{"", "offset 0"},
		{"   ", "end of input"},
		{"a =", "expected a literal"},
		{"a = 'x", "unterminated string"},
		{"(a = 1", "expected ')'"},
		{"a IN ()", "expected string literal"},
		{"a IN ('x',)", "expected string literal"},
		{"a IN ('x' 'y')", "expected ',' or ')'"},
		{"a IN (1)", "expected string literal"},
		{"a > 'x'", "only numbers"},
		{"a > TRUE", "only numbers"},
		{"a = NULL", "NULL cannot be compared"},
		{"NULL <> a", "NULL cannot be compared"},
		{"TRUE = 1", "boolean literal"},
		{"5", "boolean value"},
		{"'x'", "boolean value"},
		{"a AND 1", "boolean value"},
		{"NOT -a", "boolean value"},
		{"a BETWEEN 3 AND 1", "lower bound"},
		{"a BETWEEN 'a' AND 'b'", "only numbers"},
		{"a BETWEEN 'b' AND 5", "lower bound"},
		{"a BETWEEN 1 AND NULL", "NULL"},
		{"a BETWEEN 1 OR 2", "expected AND"},
		{"NOT a > 1", "boolean expression"},
		{"NOT a IN ('x')", "IN needs a property"},
		{"(a = 1) > 2", "boolean expression"},
		{"a > 0.0", "less than"},
		{"a > 1e400", "greater than"},
		{"a = 9223372036854775808", "out of range"},
		{"a.b = 1", "unexpected character"},
		{"a != 1", "unexpected character"},
		{"a == 1", "expected a literal"},
		{"a IS 5", "expected NULL or NOT NULL"},
		{"a IS NOT 5", "expected NULL"},
		{"a NOT LIKE 'x'", "after NOT"},
		{"a CONTAINS b", "expected string literal"},
		{"a = 1 #", "unexpected character"},
		{"a = 1 /* open", "unterminated comment"},
		{"a = 1 AND", "end of input"},
		{"AND a = 1", "found AND"},
		{"-a IN ('x')", "IN needs a property"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			x, err := Compile(tt.expr)
			require.Error(t, err, "compiled to %v", x)
			assert.ErrorIs(t, err, ErrSyntax)
			assert.NotErrorIs(t, err, ErrLimit)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestCompileErrorOffset(t *testing.T) {
	_, err := Compile("a = 1 AND b >")
	require.ErrorIs(t, err, ErrSyntax)
	assert.Contains(t, err.Error(), "offset 13: expected a literal, a property name or '(', found end of input")
}

func TestLimits(t *testing.T) {
	long := "a = '" + strings.Repeat("x", MaxExprLen) + "'"
	_, err := Compile(long)
	require.ErrorIs(t, err, ErrSyntax)
	require.ErrorIs(t, err, ErrLimit)

	deepParens := strings.Repeat("(", MaxDepth+1) + "a = 1" + strings.Repeat(")", MaxDepth+1)
	_, err = Compile(deepParens)
	require.ErrorIs(t, err, ErrLimit)

	deepNot := strings.Repeat("NOT ", 10000) + "a"
	_, err = Compile(deepNot)
	require.ErrorIs(t, err, ErrLimit)

	deepEq := "a" + strings.Repeat(" = a", 1000)
	_, err = Compile(deepEq)
	require.ErrorIs(t, err, ErrLimit)

	// Long chains of AND / OR are one level deep.
	var sb strings.Builder
	for i := 0; i < 5000; i++ {
		if i > 0 {
			sb.WriteString(" OR ")
		}
		sb.WriteString("a = " + strconv.Itoa(i))
	}
	x, err := Compile(sb.String())
	require.NoError(t, err)
	assert.True(t, x.Match(props("a", "4999")))
	assert.False(t, x.Match(props("a", "5000")))

	ok := strings.Repeat("(", 50) + "a = 1" + strings.Repeat(")", 50)
	_, err = Compile(ok)
	require.NoError(t, err)
}

func TestMatchMap(t *testing.T) {
	x, err := Compile("n >= 100 AND color = 'red' AND note IS NOT NULL")
	require.NoError(t, err)
	assert.True(t, x.MatchMap(map[string]string{"n": "100", "color": "red", "note": ""}))
	assert.False(t, x.MatchMap(map[string]string{"n": "100", "color": "red"}))
	assert.False(t, x.MatchMap(nil))
	// In the encoded form an empty value is dropped, as RocketMQ does.
	assert.False(t, x.Match(props("n", "100", "color", "red", "note", "")))
}

// TestManyProperties covers properties beyond the ones resolved up front.
func TestManyProperties(t *testing.T) {
	var expr []string
	var kv []string
	m := map[string]string{}
	for i := 0; i < inlineSlots+8; i++ {
		name := "p" + strconv.Itoa(i)
		expr = append(expr, name+" = "+strconv.Itoa(i))
		kv = append(kv, name, strconv.Itoa(i))
		m[name] = strconv.Itoa(i)
	}
	x, err := Compile(strings.Join(expr, " AND "))
	require.NoError(t, err)
	assert.True(t, x.Match(props(kv...)))
	assert.True(t, x.MatchMap(m))
	kv[len(kv)-1] = "0"
	m["p39"] = "0"
	assert.False(t, x.Match(props(kv...)))
	assert.False(t, x.MatchMap(m))
	assert.True(t, x.Match(append(props(kv...), "p39\x0139"...)), "last duplicate wins")
}

// TestMatchDoesNotAllocate checks the hot path stays allocation-free.
func TestMatchDoesNotAllocate(t *testing.T) {
	x, err := Compile("n >= 100 AND color = 'red' AND TAGS IN ('TagA', 'TagB') " +
		"AND price BETWEEN 1.5 AND 99.9 AND gone IS NULL AND ratio > 0.25 " +
		"AND NOT (region <> 'eu') AND name STARTSWITH 'ord' AND big < 9000000000")
	require.NoError(t, err)
	p := props("UNIQ_KEY", "7F0000015F4B18B4AAC26A1E4E5A0000", "TAGS", "TagB",
		"n", "150", "color", "red", "price", "12.50", "ratio", " 0.5 ",
		"region", "eu", "name", "order-1", "big", "8999999999", "WAIT", "true")
	require.True(t, x.Match(p))
	allocs := testing.AllocsPerRun(1000, func() {
		if !x.Match(p) {
			t.Fatal("no match")
		}
	})
	assert.Zero(t, allocs)

	miss := props("n", "abc", "color", "red")
	allocs = testing.AllocsPerRun(1000, func() {
		if x.Match(miss) {
			t.Fatal("match")
		}
	})
	assert.Zero(t, allocs)
}

func TestConcurrentMatch(t *testing.T) {
	x, err := Compile("a BETWEEN 0 AND 3 OR TAGS IN ('TagA')")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				a := strconv.Itoa((g + i) % 6)
				if got, want := x.Match(props("a", a)), (g+i)%6 <= 3; got != want {
					t.Errorf("a=%s: got %v", a, got)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

// TestRocketMQOracle replays results recorded from Apache RocketMQ's own
// filter implementation (see the header of the data file).
func TestRocketMQOracle(t *testing.T) {
	f, err := os.Open("testdata/rocketmq_oracle.txt")
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Split(line, "\t")
		require.Len(t, fields, 3, line)
		expr, err := strconv.Unquote(fields[1])
		require.NoError(t, err, line)
		p, err := strconv.Unquote(fields[2])
		require.NoError(t, err, line)
		n++
		x, err := Compile(expr)
		if fields[0] == "E" {
			if assert.Error(t, err, "%q should not compile", expr) {
				assert.True(t, errors.Is(err, ErrSyntax))
			}
			continue
		}
		if !assert.NoError(t, err, "%q", expr) {
			continue
		}
		assert.Equal(t, fields[0], string(evalResult(x, []byte(p))), "%q with %q", expr, p)
		assert.Equal(t, fields[0] == "T", x.Match([]byte(p)), "%q with %q", expr, p)
	}
	require.NoError(t, sc.Err())
	assert.Greater(t, n, 1000)
}

// evalResult is the evaluation outcome in RocketMQ's terms: T, F, N (null)
// or X (the Java evaluator throws).
func evalResult(x *Expr, p []byte) byte {
	e := env{x: x, props: p}
	e.scan()
	v, ok := x.root.eval(&e)
	switch {
	case !ok:
		return 'X'
	case v.k == kNull:
		return 'N'
	case v.b:
		return 'T'
	}
	return 'F'
}
