package filter

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parser is a recursive-descent parser with the structure of RocketMQ's
// SelectorParser.jj, so that it accepts, refuses and reads ahead exactly as
// that parser does. Nodes are built, and RocketMQ's static checks applied,
// as the grammar is recognised.
type parser struct {
	lex   lexer
	depth int
	slots map[string]int
	names []string
}

func (p *parser) errorf(pos int, format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrSyntax, pos, fmt.Sprintf(format, args...))
}

func (p *parser) describe(t token) string {
	switch t.kind {
	case tEOF:
		return "end of input"
	case tID, tString, tDecimal, tFloat:
		text := p.lex.src[t.pos:t.end]
		if len(text) > 40 {
			text = text[:40] + "..."
		}
		return strconv.Quote(text)
	}
	return t.kind.String()
}

func (p *parser) expected(t token, what string) error {
	return p.errorf(t.pos, "expected %s, found %s", what, p.describe(t))
}

// expect consumes a token of kind k.
func (p *parser) expect(k tokKind) (token, error) {
	t, err := p.lex.next()
	if err != nil {
		return t, err
	}
	if t.kind != k {
		return t, p.expected(t, k.String())
	}
	return t, nil
}

func (p *parser) parse() (*node, error) {
	t, err := p.lex.peek()
	if err != nil {
		return nil, err
	}
	n, err := p.parseOr()
	if err != nil {
		return nil, err
	}
	// Like RocketMQ, whatever follows the expression is not examined beyond
	// the one token already read to find where the expression ends.
	return p.asBool(n, t.pos)
}

func (p *parser) parseOr() (*node, error) { return p.parseLogic(tOR, opOr, p.parseAnd) }

func (p *parser) parseAnd() (*node, error) { return p.parseLogic(tAND, opAnd, p.parseEquality) }

// parseLogic parses operand (kind operand)*, left-associative, into op nodes: OR over AND
// operands, AND over equality operands.
func (p *parser) parseLogic(kind tokKind, op opKind, operand func() (*node, error)) (*node, error) {
	start, err := p.lex.peek()
	if err != nil {
		return nil, err
	}
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		t, err := p.lex.peek()
		if err != nil {
			return nil, err
		}
		if t.kind != kind {
			return left, nil
		}
		_, _ = p.lex.next()
		right, err := operand()
		if err != nil {
			return nil, err
		}
		if left, err = p.logic(op, left, right, start.pos, t.end); err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseEquality() (*node, error) {
	left, err := p.parseComparison()
	if err != nil {
		return nil, err
	}
	for {
		t, err := p.lex.peek()
		if err != nil {
			return nil, err
		}
		switch t.kind {
		case tEq, tNe:
			left, err = p.equalityOp(left, t)
		case tIS:
			left, err = p.isNull(left, t)
		default:
			return left, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// equalityOp parses the right side of = or <> (operator t is next).
func (p *parser) equalityOp(left *node, t token) (*node, error) {
	_, _ = p.lex.next()
	right, err := p.parseComparison()
	if err != nil {
		return nil, err
	}
	n, err := p.equal(left, right, t.pos)
	if err != nil || t.kind == tEq {
		return n, err
	}
	return p.mk(t.pos, &node{op: opNot, kids: []*node{n}})
}

// isNull parses IS NULL or IS NOT NULL (IS is next).
func (p *parser) isNull(left *node, is token) (*node, error) {
	_, _ = p.lex.next()
	t, err := p.lex.next()
	if err != nil {
		return nil, err
	}
	not := t.kind == tNOT
	if not {
		if t, err = p.lex.next(); err != nil {
			return nil, err
		}
	}
	if t.kind != tNULL {
		if not {
			return nil, p.expected(t, "NULL")
		}
		return nil, p.expected(t, "NULL or NOT NULL")
	}
	n, err := p.mk(is.pos, &node{op: opEq, kids: []*node{left, newNull()}})
	if err != nil || !not {
		return n, err
	}
	return p.mk(is.pos, &node{op: opNot, kids: []*node{n}})
}

func (p *parser) parseComparison() (*node, error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t, err := p.lex.peek()
		if err != nil {
			return nil, err
		}
		op, not := t.kind, false
		switch op {
		case tGt, tGe, tLt, tLe, tBETWEEN, tIN, tCONTAINS, tSTARTSWITH, tENDSWITH:
		case tNOT:
			t2, err := p.lex.peek2()
			if err != nil {
				return nil, err
			}
			switch t2.kind {
			case tBETWEEN, tIN, tCONTAINS, tSTARTSWITH, tENDSWITH:
				_, _ = p.lex.next()
				op, not = t2.kind, true
			default:
				return nil, p.expected(t2, "BETWEEN, IN, CONTAINS, STARTSWITH or ENDSWITH after NOT")
			}
		default:
			return left, nil
		}
		_, _ = p.lex.next()
		switch op {
		case tGt, tGe, tLt, tLe:
			var right *node
			if right, err = p.parseUnary(); err == nil {
				left, err = p.compare(cmpOf(op), left, right, t.pos)
			}
		case tCONTAINS, tSTARTSWITH, tENDSWITH:
			var lit []byte
			if lit, err = p.stringLit(); err == nil {
				left, err = p.mk(t.pos, &node{op: opStr, str: strOf(op), not: not, lit: lit, kids: []*node{left}})
			}
		case tBETWEEN:
			left, err = p.between(left, not, t.pos)
		case tIN:
			left, err = p.in(left, not, t.pos)
		}
		if err != nil {
			return nil, err
		}
	}
}

func (p *parser) between(value *node, not bool, pos int) (*node, error) {
	low, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if _, err = p.expect(tAND); err != nil {
		return nil, err
	}
	high, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	if not {
		a, err := p.compare(cmpLt, value, low, pos)
		if err != nil {
			return nil, err
		}
		b, err := p.compare(cmpGt, value, high, pos)
		if err != nil {
			return nil, err
		}
		return p.logic(opOr, a, b, pos, pos)
	}
	if low.op == opConst && high.op == opConst {
		if low.val.k == kNull || high.val.k == kNull {
			return nil, p.errorf(pos, "BETWEEN bounds cannot be NULL")
		}
		c, ok := compareValues(high.val, low.val)
		if !ok || c < 0 {
			return nil, p.errorf(pos, "BETWEEN lower bound must not exceed the upper bound")
		}
	}
	a, err := p.compare(cmpGe, value, low, pos)
	if err != nil {
		return nil, err
	}
	b, err := p.compare(cmpLe, value, high, pos)
	if err != nil {
		return nil, err
	}
	return p.logic(opAnd, a, b, pos, pos)
}

func (p *parser) in(left *node, not bool, pos int) (*node, error) {
	if left.op != opProp {
		return nil, p.errorf(pos, "IN needs a property name on its left")
	}
	if _, err := p.expect(tLParen); err != nil {
		return nil, err
	}
	var set [][]byte
	for {
		s, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		set = append(set, s)
		t, err := p.lex.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tRParen {
			break
		}
		if t.kind != tComma {
			return nil, p.expected(t, "',' or ')'")
		}
	}
	return p.mk(pos, &node{op: opIn, not: not, slot: left.slot, set: set})
}

func (p *parser) parseUnary() (*node, error) {
	t, err := p.lex.peek()
	if err != nil {
		return nil, err
	}
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxDepth {
		return nil, fmt.Errorf("%w: %w: offset %d: nesting deeper than %d", ErrSyntax, ErrLimit, t.pos, MaxDepth)
	}
	switch t.kind {
	case tPlus:
		_, _ = p.lex.next()
		return p.parseUnary()
	case tMinus:
		_, _ = p.lex.next()
		n, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return p.mk(t.pos, &node{op: opNeg, kids: []*node{n}})
	case tNOT:
		_, _ = p.lex.next()
		n, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		if n, err = p.asBool(n, t.pos); err != nil {
			return nil, err
		}
		return p.mk(t.pos, &node{op: opNot, kids: []*node{n}})
	}
	return p.parsePrimary()
}

func (p *parser) parsePrimary() (*node, error) {
	t, err := p.lex.next()
	if err != nil {
		return nil, err
	}
	text := p.lex.src[t.pos:t.end]
	switch t.kind {
	case tLParen:
		n, err := p.parseOr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen); err != nil {
			return nil, err
		}
		return n, nil
	case tID:
		slot, ok := p.slots[text]
		if !ok {
			slot = len(p.names)
			p.slots[text] = slot
			p.names = append(p.names, text)
		}
		return &node{op: opProp, slot: slot, depth: 1}, nil
	case tString:
		return &node{op: opConst, val: value{k: kString, s: unquote(text)}, depth: 1}, nil
	case tTRUE, tFALSE:
		return &node{op: opConst, val: value{k: kBool, b: t.kind == tTRUE}, depth: 1}, nil
	case tNULL:
		return newNull(), nil
	case tDecimal:
		digits := strings.TrimRight(text, "lL")
		i, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			return nil, p.errorf(t.pos, "integer literal %s out of range", digits)
		}
		k := kLong
		if i >= math.MinInt32 && i <= math.MaxInt32 {
			k = kInt
		}
		return &node{op: opConst, val: value{k: k, i: i}, depth: 1}, nil
	case tFloat:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, p.errorf(t.pos, "decimal literal %s is greater than Double.MAX_VALUE", text)
		}
		if f < math.SmallestNonzeroFloat64 {
			return nil, p.errorf(t.pos, "decimal literal %s is less than Double.MIN_VALUE (4.9E-324)", text)
		}
		return &node{op: opConst, val: value{k: kDouble, f: f}, depth: 1}, nil
	}
	return nil, p.expected(t, "a literal, a property name or '('")
}

func (p *parser) stringLit() ([]byte, error) {
	t, err := p.expect(tString)
	if err != nil {
		return nil, err
	}
	return unquote(p.lex.src[t.pos:t.end]), nil
}

// unquote decodes a string literal token: strips the outer quotes and
// undoubles the inner ones.
func unquote(tok string) []byte {
	return []byte(strings.ReplaceAll(tok[1:len(tok)-1], "''", "'"))
}

// newNull returns a NULL literal node.
func newNull() *node { return &node{op: opConst, depth: 1} }

// mk checks the depth of a new node.
func (p *parser) mk(pos int, n *node) (*node, error) {
	for _, k := range n.kids {
		n.depth = max(n.depth, k.depth+1)
	}
	if n.depth > MaxDepth {
		return nil, fmt.Errorf("%w: %w: offset %d: expression nested deeper than %d", ErrSyntax, ErrLimit, pos, MaxDepth)
	}
	return n, nil
}

// isBoolean reports whether n is what RocketMQ calls a BooleanExpression.
func isBoolean(n *node) bool {
	switch n.op {
	case opConst:
		return n.val.k == kBool || n.val.k == kNull
	case opProp, opNeg:
		return false
	}
	return true
}

// asBool is RocketMQ's asBooleanExpression: boolean expressions pass, a bare
// property is cast (FALSE when present, NULL when missing), anything else is
// an error.
func (p *parser) asBool(n *node, pos int) (*node, error) {
	if isBoolean(n) {
		return n, nil
	}
	if n.op == opProp {
		return p.mk(pos, &node{op: opCast, kids: []*node{n}})
	}
	return nil, p.errorf(pos, "expression does not result in a boolean value")
}

// logic builds AND/OR; chains of the same operator become one node.
func (p *parser) logic(op opKind, l, r *node, pos, opPos int) (*node, error) {
	var err error
	if l, err = p.asBool(l, pos); err != nil {
		return nil, err
	}
	if r, err = p.asBool(r, opPos); err != nil {
		return nil, err
	}
	n := &node{op: op}
	if l.op == op {
		n.kids = l.kids // l is a logic node nobody else refers to
	} else {
		n.kids = []*node{l}
	}
	if r.op == op {
		n.kids = append(n.kids, r.kids...)
	} else {
		n.kids = append(n.kids, r)
	}
	return p.mk(pos, n)
}

// equal builds "=" with RocketMQ's checks: no NULL literal operand, and a
// TRUE/FALSE literal on the left cannot be compared with another literal.
func (p *parser) equal(l, r *node, pos int) (*node, error) {
	if l.op == opConst && l.val.k == kNull || r.op == opConst && r.val.k == kNull {
		return nil, p.errorf(pos, "NULL cannot be compared with = or <>; use IS NULL")
	}
	if l.op == opConst && r.op == opConst && l.val.k == kBool && r.val.k != kBool {
		return nil, p.errorf(pos, "a boolean literal cannot be compared with a non-boolean literal")
	}
	return p.mk(pos, &node{op: opEq, kids: []*node{l, r}})
}

// compare builds >, >=, <, <= with RocketMQ's checks: literal operands must
// be numbers and boolean expressions are not allowed.
func (p *parser) compare(op cmpOp, l, r *node, pos int) (*node, error) {
	for _, n := range [2]*node{l, r} {
		if n.op == opConst {
			if k := n.val.k; k != kInt && k != kLong && k != kDouble {
				return nil, p.errorf(pos, "only numbers can be compared with <, <=, >, >= or BETWEEN")
			}
		} else if isBoolean(n) {
			return nil, p.errorf(pos, "a boolean expression cannot be compared with <, <=, >, >= or BETWEEN")
		}
	}
	return p.mk(pos, &node{op: opCmp, cmp: op, kids: []*node{l, r}})
}

func cmpOf(k tokKind) cmpOp {
	switch k {
	case tGt:
		return cmpGt
	case tGe:
		return cmpGe
	case tLt:
		return cmpLt
	}
	return cmpLe
}

func strOf(k tokKind) strOp {
	switch k {
	case tCONTAINS:
		return strContains
	case tSTARTSWITH:
		return strStartsWith
	}
	return strEndsWith
}
