package acl

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// AddressPattern is a compiled remote-address pattern of the accounts file
// (globalWhiteRemoteAddresses entries and an account's whiteRemoteAddress). It is parsed
// once; Match does no parsing and no allocation. The zero value matches nothing.
//
// The forms are RocketMQ's (acl/plain/RemoteAddressStrategyFactory.java), tried in this
// order on the trimmed text:
//
//	""                          blank: matches nothing
//	*  *.*.*.*  *:*:*:*:*:*:*:*  any address
//	192.168.0.{1,2,30}          a set: the prefix completed by each brace item
//	                            (one octet, or one IPv6 group after "…:")
//	192.168.0.1,10.0.0.2,::1    a set of exact addresses (comma list)
//	192.168.1.1-100             a range in one octet; the octets after it must be '*':
//	192.168.1-5.*  10.*.*.*     "a.b.c.X", "a.b.X.*", "a.X.*.*" with X '*' or "lo-hi"
//	2001:db8::1:*               IPv6: '*' only as the last group, a "lo-hi" hex range
//	2001:db8::1:0-ff            only in the last group, or in the 7th followed by ":*";
//	2001:db8::1:0-ff:*          "::" in the prefix stands for zero groups as in an address
//	192.168.0.1  2001:db8::1    one exact address
//
// Differences from RocketMQ, all of which refuse a pattern RocketMQ would accept but
// mis-handle: octets after a wildcard or range must be '*' (RocketMQ ignores them), the
// first octet cannot be a wildcard or range (RocketMQ's matcher then never matches), a
// brace item must be a single octet or group, numbers are plain decimal (IPv4) or hex
// (IPv6), and zones ("%eth0") are refused. "fe80::*" means fe80:0:0:0:0:0:0:* (the
// wildcard covers the last group only), not a /16 prefix.
//
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) are matched as the IPv4 address, both in
// patterns and in Match's argument.
type AddressPattern struct {
	src   string
	kind  patternKind
	addrs []netip.Addr // patternSet
	v6    bool         // patternRange: IPv6 groups (else IPv4 octets in [0:4])
	lo    [8]uint16    // patternRange: inclusive per-group bounds
	hi    [8]uint16
}

type patternKind uint8

const (
	patternNone patternKind = iota
	patternAny
	patternSet
	patternRange
)

// ParseAddressPattern compiles one pattern (see [AddressPattern] for the forms).
func ParseAddressPattern(s string) (AddressPattern, error) {
	t := strings.TrimSpace(s)
	p := AddressPattern{src: t}
	var err error
	switch {
	case t == "":
		p.kind = patternNone
	case t == "*" || t == "*.*.*.*" || t == "*:*:*:*:*:*:*:*":
		p.kind = patternAny
	case strings.HasSuffix(t, "}"):
		p.kind = patternSet
		p.addrs, err = parseBraces(t)
	case strings.Contains(t, ","):
		p.kind = patternSet
		p.addrs, err = parseList(t)
	case strings.ContainsAny(t, "*-"):
		p.kind = patternRange
		if strings.Contains(t, ":") {
			p.v6 = true
			err = p.parseRange6(t)
		} else {
			err = p.parseRange4(t)
		}
	default:
		var a netip.Addr
		a, err = parseExact(t)
		p.kind = patternSet
		p.addrs = []netip.Addr{a}
	}
	if err != nil {
		return AddressPattern{}, fmt.Errorf("address pattern %s: %w", quote(t), err)
	}
	return p, nil
}

// String returns the pattern's (trimmed) source text.
func (p *AddressPattern) String() string { return p.src }

// MatchesAll reports whether the pattern matches every address ("*").
func (p *AddressPattern) MatchesAll() bool { return p.kind == patternAny }

// Match reports whether a matches the pattern. An invalid (zero) address matches only
// "*".
func (p *AddressPattern) Match(a netip.Addr) bool {
	switch p.kind {
	case patternAny:
		return true
	case patternNone:
		return false
	}
	if !a.IsValid() {
		return false
	}
	a = a.WithZone("").Unmap()
	if p.kind == patternSet {
		for _, x := range p.addrs {
			if x == a {
				return true
			}
		}
		return false
	}
	if p.v6 {
		if !a.Is6() {
			return false
		}
		b := a.As16()
		for i := range 8 {
			g := uint16(b[2*i])<<8 | uint16(b[2*i+1])
			if g < p.lo[i] || g > p.hi[i] {
				return false
			}
		}
		return true
	}
	if !a.Is4() {
		return false
	}
	b := a.As4()
	for i := range 4 {
		if uint16(b[i]) < p.lo[i] || uint16(b[i]) > p.hi[i] {
			return false
		}
	}
	return true
}

// parseExact parses one exact address: no zone, IPv4-mapped turned into IPv4.
func parseExact(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		return netip.Addr{}, errors.New("not an IPv4 or IPv6 address")
	}
	if a.Zone() != "" {
		return netip.Addr{}, errors.New("an address zone is not allowed")
	}
	return a.Unmap(), nil
}

// parseBraces parses "prefix{item,item,…}" where prefix ends in '.' or ':' and each
// item is one octet or group.
func parseBraces(t string) ([]netip.Addr, error) {
	open := strings.IndexByte(t, '{')
	if open < 0 || strings.Count(t, "{") != 1 || strings.Count(t, "}") != 1 {
		return nil, errors.New(`want "prefix.{a,b,…}" with one pair of braces at the end`)
	}
	prefix := t[:open]
	if !strings.HasSuffix(prefix, ".") && !strings.HasSuffix(prefix, ":") {
		return nil, errors.New(`the braces must follow a '.' or ':'`)
	}
	var out []netip.Addr
	for item := range strings.SplitSeq(t[open+1:len(t)-1], ",") {
		item = strings.TrimSpace(item)
		if item == "" || strings.ContainsAny(item, ".:") {
			return nil, fmt.Errorf("brace item %s is not one octet or group", quote(item))
		}
		a, err := parseExact(prefix + item)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", quote(prefix+item), err)
		}
		out = append(out, a)
	}
	return out, nil
}

// parseList parses a comma list of exact addresses; empty items are skipped (as
// RocketMQ's StringUtils.split does).
func parseList(t string) ([]netip.Addr, error) {
	var out []netip.Addr
	for item := range strings.SplitSeq(t, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		a, err := parseExact(item)
		if err != nil {
			return nil, fmt.Errorf("list item %s: %w", quote(item), err)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, errors.New("empty address list")
	}
	return out, nil
}

// parseRange4 parses "a.b.c.X", "a.b.X.*" or "a.X.*.*" with X '*' or "lo-hi".
func (p *AddressPattern) parseRange4(t string) error {
	parts := strings.Split(t, ".")
	if len(parts) != 4 {
		return errors.New("an IPv4 pattern has four dot-separated parts")
	}
	special := -1
	for i, part := range parts {
		part = strings.TrimSpace(part)
		switch {
		case special >= 0:
			if part != "*" {
				return errors.New("the parts after a wildcard or range must be '*'")
			}
			p.lo[i], p.hi[i] = 0, 255
		case part == "*":
			special = i
			p.lo[i], p.hi[i] = 0, 255
		case strings.Contains(part, "-"):
			special = i
			a, b, _ := strings.Cut(part, "-")
			lo, err1 := parseOctet(a)
			hi, err2 := parseOctet(b)
			if err1 != nil || err2 != nil || lo > hi {
				return fmt.Errorf("range %s is not lo-hi with 0 <= lo <= hi <= 255", quote(part))
			}
			p.lo[i], p.hi[i] = lo, hi
		default:
			v, err := parseOctet(part)
			if err != nil {
				return fmt.Errorf("octet %s: %w", quote(part), err)
			}
			p.lo[i], p.hi[i] = v, v
		}
		if special == 0 {
			return errors.New("the first octet cannot be a wildcard or range (use * for any address)")
		}
	}
	return nil
}

func parseOctet(s string) (uint16, error) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 3 || strings.Trim(s, "0123456789") != "" {
		return 0, errors.New("not a decimal number")
	}
	v, _ := strconv.Atoi(s)
	if v > 255 {
		return 0, errors.New("greater than 255")
	}
	return uint16(v), nil
}

func parseGroup(s string) (uint16, error) {
	if s == "" || len(s) > 4 {
		return 0, errors.New("not a 1-4 digit hexadecimal group")
	}
	v, err := strconv.ParseUint(s, 16, 16)
	if err != nil {
		return 0, errors.New("not a 1-4 digit hexadecimal group")
	}
	return uint16(v), nil
}

// parseRange6 parses an IPv6 prefix followed by ":*", ":lo-hi" or ":lo-hi:*".
func (p *AddressPattern) parseRange6(t string) error {
	rest := t
	star := false
	if strings.HasSuffix(rest, ":*") {
		star = true
		rest = rest[:len(rest)-2]
	}
	if strings.Contains(rest, "*") {
		return errors.New("in an IPv6 pattern '*' may only be the last group")
	}
	if strings.Contains(rest, ".") {
		return errors.New("an IPv6 pattern takes hexadecimal groups only")
	}
	var specials [][2]uint16
	if j := strings.LastIndexByte(rest, ':'); j >= 0 && strings.Contains(rest[j+1:], "-") {
		a, b, _ := strings.Cut(rest[j+1:], "-")
		lo, err1 := parseGroup(a)
		hi, err2 := parseGroup(b)
		if err1 != nil || err2 != nil || lo > hi {
			return fmt.Errorf("range %s is not lo-hi with hexadecimal 0 <= lo <= hi <= ffff", quote(rest[j+1:]))
		}
		specials = append(specials, [2]uint16{lo, hi})
		rest = rest[:j]
	}
	if strings.Contains(rest, "-") {
		return errors.New("in an IPv6 pattern a range may only be the last group, or the one before a last '*'")
	}
	if star {
		specials = append(specials, [2]uint16{0, 0xffff})
	}
	if len(specials) == 0 {
		return errors.New("not an IPv6 pattern")
	}
	// A "::" right before the special groups lost its second ':' to the split above.
	if strings.HasSuffix(rest, ":") && !strings.HasSuffix(rest, "::") {
		rest += ":"
	}
	groups, err := expandGroups(rest, 8-len(specials))
	if err != nil {
		return err
	}
	for i, g := range groups {
		p.lo[i], p.hi[i] = g, g
	}
	for i, s := range specials {
		p.lo[len(groups)+i], p.hi[len(groups)+i] = s[0], s[1]
	}
	return nil
}

// expandGroups parses n IPv6 groups, "::" standing for one or more zero groups.
func expandGroups(s string, n int) ([]uint16, error) {
	split := func(x string) ([]uint16, error) {
		if x == "" {
			return nil, nil
		}
		var out []uint16
		for g := range strings.SplitSeq(x, ":") {
			v, err := parseGroup(g)
			if err != nil {
				return nil, fmt.Errorf("group %s: %w", quote(g), err)
			}
			out = append(out, v)
		}
		return out, nil
	}
	if strings.Count(s, "::") > 1 || strings.Contains(s, ":::") {
		return nil, errors.New(`"::" may appear once`)
	}
	left, right, double := strings.Cut(s, "::")
	if !double {
		g, err := split(s)
		if err != nil {
			return nil, err
		}
		if len(g) != n {
			return nil, fmt.Errorf("want %d groups before the wildcard or range, have %d", n, len(g))
		}
		return g, nil
	}
	lg, err := split(left)
	if err != nil {
		return nil, err
	}
	rg, err := split(right)
	if err != nil {
		return nil, err
	}
	if len(lg)+len(rg) >= n {
		return nil, fmt.Errorf(`too many groups around "::" for %d groups`, n)
	}
	out := make([]uint16, n)
	copy(out, lg)
	copy(out[n-len(rg):], rg)
	return out, nil
}
