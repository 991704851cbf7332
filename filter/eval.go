package filter

import (
	"bytes"
	"cmp"
	"math"
)

// kind is the Java type of a value during evaluation.
type kind uint8

const (
	kNull   kind = iota
	kBool        // java.lang.Boolean
	kInt         // java.lang.Integer (int literals that fit 32 bits)
	kLong        // java.lang.Long
	kDouble      // java.lang.Double
	kString      // java.lang.String (literals and property values)
)

// value is one evaluation result. s refers to the compiled expression or to
// the caller's property bytes and is never written.
type value struct {
	k kind
	b bool
	i int64
	f float64
	s []byte
}

func boolValue(b bool) value { return value{k: kBool, b: b} }

type opKind uint8

const (
	opConst opKind = iota // val
	opProp                // property in slot
	opNeg                 // unary minus of kids[0]
	opCast                // kids[0] (a property) used as a condition
	opNot                 // NOT kids[0]
	opAnd                 // kids[0] AND kids[1] AND ...
	opOr                  // kids[0] OR kids[1] OR ...
	opEq                  // kids[0] = kids[1]
	opCmp                 // kids[0] <cmp> kids[1]
	opIn                  // property in slot [NOT] IN set
	opStr                 // kids[0] [NOT] CONTAINS/STARTSWITH/ENDSWITH lit
)

type cmpOp uint8

const (
	cmpGt cmpOp = iota
	cmpGe
	cmpLt
	cmpLe
)

type strOp uint8

const (
	strContains strOp = iota
	strStartsWith
	strEndsWith
)

// node is a compiled expression tree node.
type node struct {
	op    opKind
	cmp   cmpOp
	str   strOp
	not   bool // NOT IN, NOT CONTAINS, ...
	slot  int
	depth int
	val   value
	kids  []*node
	set   [][]byte
	lit   []byte
}

// eval evaluates n as RocketMQ's Expression.evaluate does. ok is false
// where RocketMQ throws, which abandons the whole evaluation.
func (n *node) eval(e *env) (v value, ok bool) {
	switch n.op {
	case opConst:
		return n.val, true
	case opProp:
		s, found := e.get(n.slot)
		if !found {
			return value{}, true
		}
		return value{k: kString, s: s}, true
	case opNeg:
		return n.evalNeg(e)
	case opCast:
		if v, ok = n.kids[0].eval(e); !ok || v.k == kNull || v.k == kBool {
			return v, ok
		}
		return boolValue(false), true
	case opNot:
		if v, ok = n.kids[0].eval(e); !ok || v.k != kBool {
			return v, ok
		}
		return boolValue(!v.b), true
	case opAnd, opOr:
		return n.evalLogic(e)
	case opEq:
		return n.evalEq(e)
	case opCmp:
		return n.evalCmp(e)
	case opIn:
		s, found := e.get(n.slot)
		if !found {
			return value{}, true
		}
		in := false
		for _, m := range n.set {
			if bytes.Equal(m, s) {
				in = true
				break
			}
		}
		return boolValue(in != n.not), true
	case opStr:
		return n.evalStr(e)
	}
	return value{}, false
}

func (n *node) evalNeg(e *env) (value, bool) {
	v, ok := n.kids[0].eval(e)
	if !ok {
		return v, false
	}
	switch v.k {
	case kInt:
		return value{k: kInt, i: int64(-int32(v.i))}, true
	case kLong:
		return value{k: kLong, i: -v.i}, true
	case kDouble:
		return value{k: kDouble, f: -v.f}, true
	}
	return value{}, true
}

// evalLogic: AND is FALSE at the first FALSE operand, else NULL if any
// operand was NULL, else TRUE; OR likewise with TRUE. This is the left-deep
// evaluation of RocketMQ's binary LogicExpression, flattened.
func (n *node) evalLogic(e *env) (value, bool) {
	decide := n.op == opOr // the operand value that decides the result
	sawNull := false
	for _, k := range n.kids {
		v, ok := k.eval(e)
		if !ok {
			return v, false
		}
		if v.k != kBool {
			sawNull = true
		} else if v.b == decide {
			return boolValue(decide), true
		}
	}
	if sawNull {
		return value{}, true
	}
	return boolValue(!decide), true
}

// evalEq mirrors the "==" ComparisonExpression: both sides are evaluated;
// NULL = NULL is TRUE, NULL = x is NULL and x = NULL is FALSE.
func (n *node) evalEq(e *env) (value, bool) {
	l, ok := n.kids[0].eval(e)
	if !ok {
		return l, false
	}
	r, ok := n.kids[1].eval(e)
	if !ok {
		return r, false
	}
	switch {
	case l.k == kNull && r.k == kNull:
		return boolValue(true), true
	case l.k == kNull:
		return value{}, true
	case r.k == kNull:
		return boolValue(false), true
	}
	c, ok := compareValues(l, r)
	if !ok {
		return value{}, false
	}
	return boolValue(c == 0), true
}

// evalCmp mirrors ComparisonExpression.evaluate for <, <=, >, >=.
func (n *node) evalCmp(e *env) (value, bool) {
	l, ok := n.kids[0].eval(e)
	if !ok || l.k == kNull {
		return l, ok
	}
	r, ok := n.kids[1].eval(e)
	if !ok || r.k == kNull {
		return r, ok
	}
	var c int
	if l.k == kString && r.k == kString {
		// Two strings are compared as doubles, or not at all.
		lf, lok := parseJavaDouble(l.s)
		if !lok {
			return value{}, false
		}
		rf, rok := parseJavaDouble(r.s)
		if !rok {
			return value{}, false
		}
		c = javaDoubleCompare(lf, rf)
	} else if c, ok = compareValues(l, r); !ok {
		return value{}, false
	}
	switch n.cmp {
	case cmpGt:
		return boolValue(c > 0), true
	case cmpGe:
		return boolValue(c >= 0), true
	case cmpLt:
		return boolValue(c < 0), true
	}
	return boolValue(c <= 0), true
}

// evalStr mirrors the CONTAINS/STARTSWITH/ENDSWITH expressions: FALSE (never
// NULL) when the pattern is empty or the operand is not a string.
func (n *node) evalStr(e *env) (value, bool) {
	if len(n.lit) == 0 {
		return boolValue(false), true
	}
	v, ok := n.kids[0].eval(e)
	if !ok {
		return v, false
	}
	if v.k != kString {
		return boolValue(false), true
	}
	var r bool
	switch n.str {
	case strContains:
		r = bytes.Contains(v.s, n.lit)
	case strStartsWith:
		r = bytes.HasPrefix(v.s, n.lit)
	default:
		r = bytes.HasSuffix(v.s, n.lit)
	}
	return boolValue(r != n.not), true
}

// compareValues is RocketMQ's ComparisonExpression.__compare with string
// conversion on. Neither value is NULL. ok is false where Java throws (a
// failed number conversion, or Boolean compared with String, a
// ClassCastException there). Two strings only ever reach here from =, so
// only whether the result is zero matters for them.
func compareValues(l, r value) (c int, ok bool) {
	if l.k == r.k {
		switch l.k {
		case kString:
			return bytes.Compare(l.s, r.s), true
		case kBool:
			return cmpBool(l.b, r.b), true
		case kDouble:
			return javaDoubleCompare(l.f, r.f), true
		}
		return cmp.Compare(l.i, r.i), true
	}
	switch l.k {
	case kBool:
		return -1, r.k != kString
	case kInt, kLong:
		switch r.k {
		case kInt, kLong:
			return cmp.Compare(l.i, r.i), true
		case kDouble:
			return javaDoubleCompare(float64(l.i), r.f), true
		case kString:
			ri, ok := parseJavaInt(r.s, l.k == kInt)
			return cmp.Compare(l.i, ri), ok
		}
	case kDouble:
		switch r.k {
		case kInt, kLong:
			return javaDoubleCompare(l.f, float64(r.i)), true
		case kString:
			rf, ok := parseJavaDouble(r.s)
			return javaDoubleCompare(l.f, rf), ok
		}
	case kString:
		switch r.k {
		case kBool:
			return cmpBool(parseJavaBool(l.s), r.b), true
		case kInt, kLong:
			li, ok := parseJavaInt(l.s, r.k == kInt)
			return cmp.Compare(li, r.i), ok
		case kDouble:
			lf, ok := parseJavaDouble(l.s)
			return javaDoubleCompare(lf, r.f), ok
		}
	}
	return -1, true // a number against a boolean
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// javaDoubleCompare is Java's Double.compare: -0.0 < 0.0, and NaN equals
// itself and is greater than everything else.
func javaDoubleCompare(a, b float64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return cmp.Compare(javaDoubleBits(a), javaDoubleBits(b))
}

// javaDoubleBits is Double.doubleToLongBits (NaNs collapse to one value).
func javaDoubleBits(f float64) int64 {
	if f != f {
		return 0x7ff8000000000000
	}
	return int64(math.Float64bits(f))
}
