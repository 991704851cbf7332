package filter

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// This file converts property values the way java.lang does when RocketMQ
// compares a string with a number, without allocating.

// parseJavaInt is Integer.parseInt (is32) or Long.parseLong: an optional
// sign and decimal digits, which Java takes from any Unicode script
// (Character.digit) but only in the Basic Multilingual Plane.
func parseJavaInt(b []byte, is32 bool) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	limit := uint64(math.MaxInt64)
	if is32 {
		limit = math.MaxInt32
	}
	neg := false
	i := 0
	if b[0] < '0' {
		switch b[0] {
		case '-':
			neg = true
			limit++
		case '+':
		default:
			return 0, false
		}
		if len(b) == 1 {
			return 0, false
		}
		i = 1
	}
	var acc uint64
	for i < len(b) {
		var d int
		if c := b[i]; c >= '0' && c <= '9' {
			d = int(c - '0')
			i++
		} else {
			r, size := utf8.DecodeRune(b[i:])
			if d = unicodeDigit(r); d < 0 {
				return 0, false
			}
			i += size
		}
		if acc > (limit-uint64(d))/10 {
			return 0, false
		}
		acc = acc*10 + uint64(d)
	}
	if neg {
		return int64(-acc), true // acc <= 1<<63; -(1<<63) wraps to MinInt64
	}
	return int64(acc), true
}

// unicodeDigit is Character.digit(ch, 10) for a non-ASCII rune: the value
// of a decimal digit (category Nd) of the BMP, or -1. Every Nd range of the
// BMP is a whole number of runs 0..9.
func unicodeDigit(r rune) int {
	if r < 0x80 || r > 0xFFFF {
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if uint16(r) < rg.Lo {
			break
		}
		if uint16(r) <= rg.Hi {
			return int(uint16(r)-rg.Lo) % 10
		}
	}
	return -1
}

// parseJavaBool is Boolean.valueOf(String): true only for "true" in any case.
func parseJavaBool(b []byte) bool {
	return len(b) == 4 && bytes.EqualFold(b, []byte("true"))
}

// parseJavaDouble is Double.valueOf(String): surrounding characters <= ' '
// are ignored; then an optional sign and NaN, Infinity, a decimal number
// (digits with at most one '.', at least one digit, optional exponent) or a
// hexadecimal one (0x..p..); decimal and hexadecimal numbers may end with
// one of f, F, d, D.
func parseJavaDouble(b []byte) (float64, bool) {
	for len(b) > 0 && b[0] <= ' ' {
		b = b[1:]
	}
	for len(b) > 0 && b[len(b)-1] <= ' ' {
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		return 0, false
	}
	i := 0
	if b[0] == '+' || b[0] == '-' {
		i = 1
	}
	rest := b[i:]
	switch {
	case len(rest) == 0:
		return 0, false
	case rest[0] == 'N':
		return math.NaN(), string(rest) == "NaN"
	case rest[0] == 'I':
		if string(rest) != "Infinity" {
			return 0, false
		}
		if b[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if c := b[len(b)-1]; c == 'f' || c == 'F' || c == 'd' || c == 'D' {
		b = b[:len(b)-1]
		rest = b[i:]
	}
	var valid bool
	if len(rest) > 1 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X') {
		valid = validHexFloat(rest[2:])
	} else {
		valid = validDecFloat(rest)
	}
	if !valid {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true // out of range: ParseFloat returns ±Inf or ±0 as Java does
}

func isHexDigit(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validDecFloat: digits with at most one '.', at least one digit, then an
// optional exponent [eE][+-]?[0-9]+.
func validDecFloat(s []byte) bool {
	i, digits, dot := 0, 0, false
	for ; i < len(s); i++ {
		if c := s[i]; isDigit(c) {
			digits++
		} else if c == '.' && !dot {
			dot = true
		} else {
			break
		}
	}
	if digits == 0 {
		return false
	}
	return i == len(s) || validExp(s[i:], 'e', 'E')
}

// validExp: exponent letter, optional sign, one or more decimal digits.
func validExp(s []byte, lo, up byte) bool {
	if len(s) < 2 || s[0] != lo && s[0] != up {
		return false
	}
	s = s[1:]
	if s[0] == '+' || s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 {
		return false
	}
	for _, c := range s {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// validHexFloat: after "0x", (hex+ "."? | hex* "." hex+) [pP] [+-]? [0-9]+.
func validHexFloat(s []byte) bool {
	i, before, after, dot := 0, 0, 0, false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case isHexDigit(c):
			if dot {
				after++
			} else {
				before++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return (before > 0 || after > 0) && validExp(s[i:], 'p', 'P')
		}
	}
	return false
}
