package acl

import (
	"errors"
	"strconv"
	"strings"
)

// Perm is a permission bit set with RocketMQ's values (acl/common/Permission.java).
// An account owns one Perm per topic and per group; a request code needs one.
type Perm uint8

// Permission bits.
const (
	// PermDeny refuses everything; it wins over any other bit an owned Perm has.
	PermDeny Perm = 1
	// PermAny, as a needed permission, is satisfied by PUB or SUB. It is not a word of
	// the accounts file.
	PermAny Perm = 1 << 1
	// PermPub allows sending to a topic.
	PermPub Perm = 1 << 2
	// PermSub allows consuming from a topic, or acting as a consumer group.
	PermSub Perm = 1 << 3
)

// errBadPerm is what ParsePerm wraps.
var errBadPerm = errors.New("want one of DENY, PUB, SUB, PUB|SUB, SUB|PUB")

// ParsePerm parses a permission word of the accounts file: "DENY", "PUB", "SUB",
// "PUB|SUB" or "SUB|PUB" (case-sensitive, surrounding blanks ignored, as RocketMQ's
// Permission.parsePermFromString). RocketMQ silently turns any other word into DENY;
// ParsePerm refuses it, so a typo cannot pass unnoticed.
func ParsePerm(s string) (Perm, error) {
	switch strings.TrimSpace(s) {
	case "DENY":
		return PermDeny, nil
	case "PUB":
		return PermPub, nil
	case "SUB":
		return PermSub, nil
	case "PUB|SUB", "SUB|PUB":
		return PermPub | PermSub, nil
	}
	return 0, errBadPerm
}

// String returns the permission as the accounts file writes it ("DENY", "PUB", "SUB",
// "PUB|SUB"), "ANY" for PermAny, "NONE" for 0, or the set bits joined by '|'.
func (p Perm) String() string {
	switch p {
	case 0:
		return "NONE"
	case PermDeny:
		return "DENY"
	case PermAny:
		return "ANY"
	case PermPub:
		return "PUB"
	case PermSub:
		return "SUB"
	case PermPub | PermSub:
		return "PUB|SUB"
	}
	var parts []string
	for _, b := range []struct {
		bit  Perm
		name string
	}{{PermDeny, "DENY"}, {PermAny, "ANY"}, {PermPub, "PUB"}, {PermSub, "SUB"}} {
		if p&b.bit != 0 {
			parts = append(parts, b.name)
		}
	}
	if rest := p &^ (PermDeny | PermAny | PermPub | PermSub); rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}

// Permits reports whether an owned permission grants a needed one, as RocketMQ's
// Permission.checkPermission: an owned DENY bit refuses everything; a needed ANY is
// granted by PUB or SUB; otherwise the needed and owned bits must share one. A needed
// 0 is never granted.
func (p Perm) Permits(need Perm) bool {
	if p&PermDeny != 0 {
		return false
	}
	if need&PermAny != 0 {
		return p&(PermPub|PermSub) != 0
	}
	return need&p != 0
}
