package filter

import (
	"errors"
	"fmt"
)

// MaxExprLen is the longest expression, in bytes, that Compile accepts.
const MaxExprLen = 64 << 10

// MaxDepth is the deepest nesting Compile accepts, counting parentheses and
// unary operators while parsing and the depth of the compiled tree (a chain
// of ANDs or ORs counts as one level).
const MaxDepth = 100

// ErrSyntax is wrapped by every error Compile returns: the expression is not
// one RocketMQ's SQL92 parser would accept (grammar, lexical or static type
// error), or it exceeds the package limits.
var ErrSyntax = errors.New("filter: invalid SQL92 expression")

// ErrLimit is wrapped, in addition to ErrSyntax, by Compile errors caused by
// an expression longer than MaxExprLen or nested deeper than MaxDepth.
var ErrLimit = errors.New("filter: expression too large")

// Expr is a compiled SQL92 filter expression. It is immutable and safe for
// concurrent use.
type Expr struct {
	src   string
	root  *node
	names []string // distinct property names; index = slot
	bname [][]byte // names as bytes, for scanning encoded properties
}

// Compile parses a RocketMQ SQL92 filter expression. The error, if any,
// wraps ErrSyntax and tells the byte offset and what was expected.
func Compile(expr string) (*Expr, error) {
	if len(expr) > MaxExprLen {
		return nil, fmt.Errorf("%w: %w: expression is %d bytes, the limit is %d",
			ErrSyntax, ErrLimit, len(expr), MaxExprLen)
	}
	p := parser{lex: lexer{src: expr}, slots: map[string]int{}}
	root, err := p.parse()
	if err != nil {
		return nil, err
	}
	x := &Expr{src: expr, root: root, names: p.names}
	x.bname = make([][]byte, len(p.names))
	for i, n := range p.names {
		x.bname[i] = []byte(n)
	}
	return x, nil
}

// String returns the source text the expression was compiled from.
func (x *Expr) String() string { return x.src }

// Match reports whether the expression is TRUE for a message whose
// properties are encoded as RocketMQ stores them: name\x01value\x02 pairs
// concatenated, the final \x02 optional. It does not allocate (except, rarely,
// when a property holds a decimal number too large for a float64) and does
// not retain props.
func (x *Expr) Match(props []byte) bool {
	e := env{x: x, props: props}
	e.scan()
	v, ok := x.root.eval(&e)
	return ok && v.k == kBool && v.b
}

// MatchMap reports whether the expression is TRUE for a message with the
// given properties. A key that is present with an empty value is a present,
// empty property (unlike in the encoded form Match reads, where RocketMQ
// drops empty values).
func (x *Expr) MatchMap(props map[string]string) bool {
	e := env{x: x, m: props, useMap: true}
	for i := 0; i < len(x.names) && i < inlineSlots; i++ {
		if s, ok := props[x.names[i]]; ok {
			e.vals[i] = []byte(s)
			e.found |= 1 << i
		}
	}
	v, ok := x.root.eval(&e)
	return ok && v.k == kBool && v.b
}
