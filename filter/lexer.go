package filter

import (
	"fmt"
	"strings"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tID
	tString
	tDecimal
	tFloat
	tNOT
	tAND
	tOR
	tBETWEEN
	tIN
	tTRUE
	tFALSE
	tNULL
	tIS
	tCONTAINS
	tSTARTSWITH
	tENDSWITH
	tEq     // =
	tNe     // <>
	tGt     // >
	tGe     // >=
	tLt     // <
	tLe     // <=
	tLParen // (
	tComma  // ,
	tRParen // )
	tPlus   // +
	tMinus  // -
)

// keyword returns the keyword kind of an identifier-shaped word, or tID.
// Keywords are matched ignoring ASCII case.
func keyword(word string) tokKind {
	if len(word) < 2 || len(word) > len("STARTSWITH") {
		return tID
	}
	for k := tNOT; k <= tENDSWITH; k++ {
		if strings.EqualFold(word, k.String()) {
			return k
		}
	}
	return tID
}

func (k tokKind) String() string {
	switch k {
	case tEOF:
		return "end of input"
	case tID:
		return "property name"
	case tString:
		return "string literal"
	case tDecimal:
		return "integer literal"
	case tFloat:
		return "decimal literal"
	case tNOT:
		return "NOT"
	case tAND:
		return "AND"
	case tOR:
		return "OR"
	case tBETWEEN:
		return "BETWEEN"
	case tIN:
		return "IN"
	case tTRUE:
		return "TRUE"
	case tFALSE:
		return "FALSE"
	case tNULL:
		return "NULL"
	case tIS:
		return "IS"
	case tCONTAINS:
		return "CONTAINS"
	case tSTARTSWITH:
		return "STARTSWITH"
	case tENDSWITH:
		return "ENDSWITH"
	case tEq:
		return "'='"
	case tNe:
		return "'<>'"
	case tGt:
		return "'>'"
	case tGe:
		return "'>='"
	case tLt:
		return "'<'"
	case tLe:
		return "'<='"
	case tLParen:
		return "'('"
	case tComma:
		return "','"
	case tRParen:
		return "')'"
	case tPlus:
		return "'+'"
	case tMinus:
		return "'-'"
	}
	return fmt.Sprintf("token(%d)", uint8(k))
}

type token struct {
	kind     tokKind
	pos, end int // byte offsets in the source
}

// lexer tokenizes on demand, like the JavaCC token manager RocketMQ uses:
// a token is read only when the parser looks at it, so text after the last
// token the parser needs is never examined.
type lexer struct {
	src  string
	pos  int
	buf  [2]token
	nbuf int
}

func (l *lexer) fill(n int) error {
	for l.nbuf < n {
		t, err := l.scan()
		if err != nil {
			return err
		}
		l.buf[l.nbuf] = t
		l.nbuf++
	}
	return nil
}

// peek returns the next token without consuming it.
func (l *lexer) peek() (token, error) {
	if err := l.fill(1); err != nil {
		return token{}, err
	}
	return l.buf[0], nil
}

// peek2 returns the token after the next one.
func (l *lexer) peek2() (token, error) {
	if err := l.fill(2); err != nil {
		return token{}, err
	}
	return l.buf[1], nil
}

// next consumes and returns the next token.
func (l *lexer) next() (token, error) {
	if err := l.fill(1); err != nil {
		return token{}, err
	}
	t := l.buf[0]
	l.buf[0] = l.buf[1]
	l.nbuf--
	return t, nil
}

func (l *lexer) errorf(pos int, format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrSyntax, pos, fmt.Sprintf(format, args...))
}

func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$'
}

func isIDPart(c byte) bool { return isIDStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skip passes over blanks and comments.
func (l *lexer) skip() error {
	s := l.src
	for l.pos < len(s) {
		switch c := s[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			l.pos++
		case c == '-' && l.pos+1 < len(s) && s[l.pos+1] == '-':
			// A line comment needs a line end; without one "--" is two minus
			// signs (the longest token that matches).
			i := strings.IndexAny(s[l.pos+2:], "\r\n")
			if i < 0 {
				return nil
			}
			l.pos += 2 + i + 1
			if s[l.pos-1] == '\r' && l.pos < len(s) && s[l.pos] == '\n' {
				l.pos++
			}
		case c == '/' && l.pos+1 < len(s) && s[l.pos+1] == '*':
			i := strings.Index(s[l.pos+2:], "*/")
			if i < 0 {
				return l.errorf(l.pos, "unterminated comment")
			}
			l.pos += 2 + i + 2
		default:
			return nil
		}
	}
	return nil
}

func (l *lexer) scan() (token, error) {
	if err := l.skip(); err != nil {
		return token{}, err
	}
	s, start := l.src, l.pos
	if start >= len(s) {
		return token{kind: tEOF, pos: start, end: start}, nil
	}
	tok := func(k tokKind, n int) (token, error) {
		l.pos = start + n
		return token{kind: k, pos: start, end: start + n}, nil
	}
	c := s[start]
	switch {
	case isIDStart(c):
		n := 1
		for start+n < len(s) && isIDPart(s[start+n]) {
			n++
		}
		return tok(keyword(s[start:start+n]), n)
	case isDigit(c) || c == '.' && start+1 < len(s) && isDigit(s[start+1]):
		k, n := scanNumber(s[start:])
		return tok(k, n)
	case c == '\'':
		n, ok := scanString(s[start:])
		if !ok {
			return token{}, l.errorf(start, "unterminated string literal")
		}
		return tok(tString, n)
	case c == '=':
		return tok(tEq, 1)
	case c == '<':
		if start+1 < len(s) && s[start+1] == '>' {
			return tok(tNe, 2)
		}
		if start+1 < len(s) && s[start+1] == '=' {
			return tok(tLe, 2)
		}
		return tok(tLt, 1)
	case c == '>':
		if start+1 < len(s) && s[start+1] == '=' {
			return tok(tGe, 2)
		}
		return tok(tGt, 1)
	case c == '(':
		return tok(tLParen, 1)
	case c == ')':
		return tok(tRParen, 1)
	case c == ',':
		return tok(tComma, 1)
	case c == '+':
		return tok(tPlus, 1)
	case c == '-':
		return tok(tMinus, 1)
	}
	return token{}, l.errorf(start, "unexpected character %q", firstRune(s[start:]))
}

func firstRune(s string) string {
	for i := range s {
		if i > 0 {
			return s[:i]
		}
	}
	return s
}

// scanNumber returns the longest integer or decimal literal at the start of
// s (which starts with a digit, or '.' and a digit):
//
//	integer: "0" | [1-9][0-9]* [lL]?
//	decimal: [0-9]+ "." [0-9]* exp? | "." [0-9]+ exp? | [0-9]+ exp
//	exp:     [eE] [+-]? [0-9]+
func scanNumber(s string) (tokKind, int) {
	digits := func(i int) int {
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		return i
	}
	exp := func(i int) int { // end of an exponent at i, or i if none
		if i >= len(s) || s[i] != 'e' && s[i] != 'E' {
			return i
		}
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if k := digits(j); k > j {
			return k
		}
		return i
	}
	intLen := 1
	if s[0] != '0' && s[0] != '.' {
		intLen = digits(0)
		if intLen < len(s) && (s[intLen] == 'l' || s[intLen] == 'L') {
			intLen++
		}
	}
	d := digits(0)
	floatLen := 0
	switch {
	case d < len(s) && s[d] == '.':
		floatLen = exp(digits(d + 1))
		if d == 0 && floatLen == 1 { // "." alone
			floatLen = 0
		}
	case d > 0:
		if e := exp(d); e > d {
			floatLen = e
		}
	}
	if floatLen > intLen || s[0] == '.' {
		return tFloat, floatLen
	}
	return tDecimal, intLen
}

// scanString returns the length of the string literal at the start of s: a
// quote, then characters other than a quote or pairs of quotes, then a
// quote. When the closing quote is missing but the text
// contains a doubled quote, the longest literal ends at the last doubled
// quote's first half, as in the JavaCC token manager.
func scanString(s string) (int, bool) {
	lastPair := -1
	for i := 1; i < len(s); i++ {
		if s[i] != '\'' {
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			lastPair = i
			i++
			continue
		}
		return i + 1, true
	}
	if lastPair >= 0 {
		return lastPair + 1, true
	}
	return 0, false
}
