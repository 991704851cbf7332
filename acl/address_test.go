package acl

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAddressPatternMatch(t *testing.T) {
	cases := []struct {
		pattern string
		match   []string
		nomatch []string
	}{
		{"", nil, []string{"127.0.0.1", "::1"}},
		{"   ", nil, []string{"127.0.0.1"}},
		{"*", []string{"1.2.3.4", "::1", "255.255.255.255"}, nil},
		{"*.*.*.*", []string{"1.2.3.4", "2001:db8::1"}, nil},
		{"*:*:*:*:*:*:*:*", []string{"1.2.3.4", "2001:db8::1"}, nil},
		{"192.168.0.1", []string{"192.168.0.1", "::ffff:192.168.0.1"}, []string{"192.168.0.2", "::1"}},
		{" 192.168.0.1 ", []string{"192.168.0.1"}, nil},
		{"::ffff:10.0.0.1", []string{"10.0.0.1"}, []string{"10.0.0.2"}},
		{"2001:db8::1", []string{"2001:db8::1", "2001:DB8:0:0:0:0:0:1", "2001:0db8::0001"}, []string{"2001:db8::2", "1.2.3.4"}},
		{"192.168.0.{1,2,30}", []string{"192.168.0.1", "192.168.0.2", "192.168.0.30"}, []string{"192.168.0.3", "192.168.0.12"}},
		{"192.168.0.{ 1 , 2 }", []string{"192.168.0.1", "192.168.0.2"}, nil},
		{"2001:db8::{1,a}", []string{"2001:db8::1", "2001:db8::a"}, []string{"2001:db8::2"}},
		{"192.168.0.1,10.0.0.1,::1", []string{"192.168.0.1", "10.0.0.1", "::1"}, []string{"192.168.0.2"}},
		{"192.168.0.1,", []string{"192.168.0.1"}, []string{"192.168.0.2"}},
		{"192.168.1.1-100", []string{"192.168.1.1", "192.168.1.50", "192.168.1.100"}, []string{"192.168.1.0", "192.168.1.101", "192.168.2.50"}},
		{"192.168.1.*", []string{"192.168.1.0", "192.168.1.255"}, []string{"192.168.2.1", "::1"}},
		{"192.168.*.*", []string{"192.168.0.0", "192.168.200.7"}, []string{"192.169.0.1"}},
		{"192.168.1-5.*", []string{"192.168.1.0", "192.168.5.255"}, []string{"192.168.0.9", "192.168.6.0"}},
		{"10.*.*.*", []string{"10.0.0.1", "10.255.255.255"}, []string{"11.0.0.1"}},
		{"10.0-0.*.*", []string{"10.0.1.1"}, []string{"10.1.0.0"}},
		{"2001:db8:0:0:0:0:1:*", []string{"2001:db8::1:0", "2001:db8::1:ffff"}, []string{"2001:db8::2:0", "192.168.1.1"}},
		{"2001:db8::1:*", []string{"2001:db8::1:0", "2001:db8::1:abcd"}, []string{"2001:db8::2:1"}},
		{"fe80::*", []string{"fe80::", "fe80::ffff"}, []string{"fe80::1:0"}},
		{"2001:db8::1:0-ff", []string{"2001:db8::1:0", "2001:db8::1:ff"}, []string{"2001:db8::1:100", "2001:db8::2:1"}},
		{"2001:db8::1-2:*", []string{"2001:db8::1:0", "2001:db8::2:ffff"}, []string{"2001:db8::3:0"}},
		{"2001:db8::0-ff", []string{"2001:db8::", "2001:db8::ff"}, []string{"2001:db8::100"}},
	}
	for _, c := range cases {
		p, err := ParseAddressPattern(c.pattern)
		require.NoError(t, err, c.pattern)
		for _, s := range c.match {
			require.True(t, p.Match(netip.MustParseAddr(s)), "%q should match %s", c.pattern, s)
		}
		for _, s := range c.nomatch {
			require.False(t, p.Match(netip.MustParseAddr(s)), "%q should not match %s", c.pattern, s)
		}
	}
}

func TestAddressPatternZeroValueAndInvalidAddr(t *testing.T) {
	var zero AddressPattern
	require.False(t, zero.Match(netip.MustParseAddr("1.2.3.4")))
	anyP, err := ParseAddressPattern("*")
	require.NoError(t, err)
	require.True(t, anyP.MatchesAll())
	require.True(t, anyP.Match(netip.Addr{}))
	one, err := ParseAddressPattern("1.2.3.4")
	require.NoError(t, err)
	require.False(t, one.Match(netip.Addr{}))
	rng, err := ParseAddressPattern("1.2.3.*")
	require.NoError(t, err)
	require.False(t, rng.Match(netip.Addr{}))
	require.Equal(t, "1.2.3.*", rng.String())
	// A zoned peer address matches the unzoned pattern.
	six, err := ParseAddressPattern("fe80::1")
	require.NoError(t, err)
	require.True(t, six.Match(netip.MustParseAddr("fe80::1%eth0")))
}

func TestAddressPatternErrors(t *testing.T) {
	bad := []string{
		"192.168.0",          // not an address
		"192.168.0.256",      // octet
		"192.168.0.01x",      // junk
		"localhost",          // names are not addresses
		"fe80::1%eth0",       // zone
		"192.168.0.{1,2",     // no closing brace → not a brace form, bad list
		"192.168.{0,1}.1",    // braces not at the end
		"192.168.0{1,2}",     // braces not after '.'
		"192.168.0.{1,,2}",   // empty item
		"192.168.0.{1.2}",    // item not one octet
		"192.168.0.{300}",    // item octet
		"{1,2}",              // nothing before
		"1.2.3.4,foo",        // list item
		",",                  // empty list
		"192.168.*.5",        // octet after wildcard
		"192.168.1-5.7",      // octet after range
		"*.1.2.3",            // wildcard first
		"1-9.*.*.*",          // range first
		"192.168.1.5-1",      // lo > hi
		"192.168.1.1-256",    // hi too big
		"192.168.1.-5",       // missing lo
		"192.168.1.1-",       // missing hi
		"192.168.1.a-b",      // not decimal
		"192.168.1.*.*",      // five parts
		"192.168.1-",         // three parts
		"2001:db8::*:1",      // '*' not last
		"2001:db8::*:*",      // two stars
		"2001:db8::1-2:3",    // range not last
		"2001:db8::1-2:3:*",  // range not next-to-last
		"2001:db8::ff-1",     // lo > hi
		"2001:db8::1-10000",  // group too big
		"1:2:3:4:5:6:7:8:*",  // too many groups
		"1:2:3:*",            // too few groups without ::
		"1::2::3:*",          // two ::
		"::ffff:1.2.3.*",     // dotted IPv6 pattern
		"1:2:3:4:5:6:7::8:*", // :: standing for nothing
		"g::*",               // not hex
	}
	for _, s := range bad {
		_, err := ParseAddressPattern(s)
		require.Error(t, err, "%q should be refused", s)
	}
}
