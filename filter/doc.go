// Package filter implements RocketMQ's SQL92 message filter: the expression
// language a consumer selects with MessageSelector.bySql (subscription
// expressionType "SQL92") and that the broker evaluates against message
// properties when enablePropertyFilter is on.
//
// The behaviour mirrors Apache RocketMQ's filter module
// (org.apache.rocketmq.filter: parser/SelectorParser.jj and the expression
// classes ComparisonExpression, LogicExpression, UnaryExpression,
// ConstantExpression and PropertyExpression), quirks included, so that an
// expression is accepted, refused and evaluated exactly as a Java broker
// would. Compile once with [Compile]; evaluate with [Expr.Match] against the
// encoded property string of a stored message, or with [Expr.MatchMap].
//
// # Lexical rules
//
// Keywords are case-insensitive (ASCII only): NOT AND OR BETWEEN IN TRUE
// FALSE NULL IS CONTAINS STARTSWITH ENDSWITH. Identifiers (property names)
// match [A-Za-z_$][A-Za-z0-9_$]* and are case-sensitive; there is no '.' in
// names. String literals use single quotes, a quote inside being written
// twice, and may span lines. Integer literals are 0 or [1-9][0-9]* with an
// optional l/L suffix and must fit a Java long; they are typed int when
// they fit 32 bits and long otherwise. Decimal literals are 1.5, 1., .5, 1e3, 1.5E-3; a
// decimal literal that overflows or is smaller than 4.9E-324 (0.0
// included) is refused. There are no negative literals: -5 is unary minus
// applied to 5. Blanks are space, tab, CR, LF and FF; comments are
// "/* ... */" and "--" up to a line end ("--" with no line end after it is two
// minus signs).
//
// # Grammar
//
// From lowest to highest precedence:
//
//	expr       := and { OR and }
//	and        := equality { AND equality }
//	equality   := comparison { ("=" | "<>") comparison | IS NULL | IS NOT NULL }
//	comparison := unary { (">" | ">=" | "<" | "<=") unary
//	                    | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) string
//	                    | [NOT] BETWEEN unary AND unary
//	                    | [NOT] IN "(" string { "," string } ")" }
//	unary      := "+" unary | "-" unary | NOT unary | primary
//	primary    := literal | identifier | "(" expr ")"
//
// NOT is a unary operator that binds tighter than every comparison, as in
// RocketMQ: "NOT a = 'x'" means "(NOT a) = 'x'" (which is never true), and
// "NOT a IN ('x')" or "NOT a > 1" are refused. Write NOT (a = 'x'), a <> 'x',
// a NOT IN (...). Like RocketMQ, the parser stops at the first token that
// cannot continue the expression and ignores the rest, provided that token
// is itself well formed: "a = 1 )" and "a = 1 b" compile as "a = 1", while
// "a = 1 #" is refused.
//
// Compile also performs RocketMQ's static checks: the whole expression, the
// operands of AND and OR and the operand of NOT must be boolean expressions
// or bare properties; the operands of >, >=, <, <= and of BETWEEN may not be
// string, boolean or NULL literals nor boolean expressions; NULL may not be
// an operand of = or <>; TRUE/FALSE = <non-boolean literal> is refused; IN
// needs a property on its left; BETWEEN bounds that are both literals must
// be non-NULL, comparable and in order (a BETWEEN 5 AND 3 is refused).
//
// # Typing and evaluation
//
// Property values are strings; a missing property is NULL. The message tag
// is simply the property TAGS, as in TAGS IN ('TagA', 'TagB'). The encoded
// property string "name\x01value\x02..." is split as RocketMQ's
// MessageDecoder does: an entry with an empty name or an empty value is
// ignored (so such a property is missing), and a repeated name keeps its
// last value. Results are TRUE, FALSE or NULL (unknown); a message matches
// only if the whole expression is TRUE.
//
//   - A bare property used as a condition is NULL when missing and FALSE
//     otherwise, whatever its value.
//   - x = y: NULL = NULL is TRUE; if only the left side is NULL the result
//     is NULL, if only the right side is NULL it is FALSE. Otherwise values of
//     the same type are compared directly (strings byte-wise); a string
//     compared with a number is converted to the number's type: Java
//     Integer.valueOf (32-bit) for an int literal, Long.valueOf for a long
//     literal, Double.valueOf for a decimal literal (which accepts surrounding
//     blanks, NaN, Infinity, hex floats and an f/d suffix); a string compared
//     with TRUE/FALSE is true when it equals "true" ignoring case; a number
//     compared with a boolean is unequal. x <> y is NOT (x = y).
//   - >, >=, <, <=: NULL on either side gives NULL. Two strings (two
//     properties) are both converted with Double.valueOf; otherwise the rules
//     of = apply. Doubles order as Java's Double.compare (NaN above +Inf).
//   - a BETWEEN l AND h is a >= l AND a <= h; NOT BETWEEN is a < l OR a > h.
//   - a IN (...) is NULL when a is missing; NOT IN likewise.
//   - CONTAINS, STARTSWITH, ENDSWITH and their NOT forms are FALSE when the
//     left side is missing or not a string, or the pattern is empty, so
//     "a NOT CONTAINS 'x'" is FALSE for a missing a, while
//     "NOT (a CONTAINS 'x')" is TRUE.
//   - Unary minus negates numbers and yields NULL for anything else.
//   - NOT NULL is NULL. AND: FALSE if any operand is FALSE, else NULL if any
//     is NULL, else TRUE. OR: TRUE if any operand is TRUE, else NULL if any is
//     NULL, else FALSE. Operands are evaluated left to right and stop at the
//     first deciding one.
//
// Where RocketMQ's evaluator throws (a string that does not convert to the
// number it is compared with, two non-numeric properties under <, a boolean
// compared with a string as in TRUE = a), the Java broker abandons the
// whole expression and does not deliver the message. Match does the same:
// such a failure makes the whole result false, even under NOT or OR,
// unless an earlier operand already decided an enclosing AND or OR.
//
// The only known differences from the Java implementation concern invalid
// UTF-8 in property values (Java first replaces it with U+FFFD; here bytes
// are compared as they are) and the limits below, which Java does not have.
//
// # Limits
//
// Compile refuses expressions longer than [MaxExprLen] bytes and nesting
// (parentheses, unary operators or tree depth) deeper than [MaxDepth], so a
// hostile subscription cannot exhaust the stack. Every error returned by
// Compile wraps [ErrSyntax]; limit violations also wrap [ErrLimit].
package filter
