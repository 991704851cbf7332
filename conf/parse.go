package conf

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ferrymq/ferry/internal/delaylevel"
)

// Byte size units. All are powers of 1024; ParseByteSize also accepts the
// decimal-looking spellings KB, MB, GB and TB with the same binary meaning,
// as RocketMQ and most operators use them.
const (
	// KiB is 1024 bytes.
	KiB int64 = 1 << 10
	// MiB is 1024 KiB.
	MiB int64 = 1 << 20
	// GiB is 1024 MiB.
	GiB int64 = 1 << 30
	// TiB is 1024 GiB.
	TiB int64 = 1 << 40
)

// ParseByteSize parses a byte count: a plain non-negative integer ("4194304")
// or an integer followed by a unit, optionally separated by a space ("4MiB",
// "1 GiB", "16mb"). Units are case-insensitive: B, K/KB/KiB, M/MB/MiB,
// G/GB/GiB, T/TB/TiB, all powers of 1024.
func ParseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid byte size %q: want an integer with an optional unit such as MiB", s)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid byte size %q: %w", s, err)
	}
	var mult int64
	switch strings.ToLower(strings.TrimSpace(t[i:])) {
	case "", "b":
		mult = 1
	case "k", "kb", "kib":
		mult = KiB
	case "m", "mb", "mib":
		mult = MiB
	case "g", "gb", "gib":
		mult = GiB
	case "t", "tb", "tib":
		mult = TiB
	default:
		return 0, fmt.Errorf("invalid byte size %q: unknown unit %q (use B, KiB, MiB, GiB or TiB)", s, t[i:])
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("invalid byte size %q: overflows int64", s)
	}
	return n * mult, nil
}

// FormatByteSize renders n with the largest binary unit that divides it
// exactly ("16MiB", "1GiB", "1500B"). ParseByteSize(FormatByteSize(n)) == n
// for every n >= 0.
func FormatByteSize(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{TiB, "TiB"}, {GiB, "GiB"}, {MiB, "MiB"}, {KiB, "KiB"}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// DefaultDelayLevels is RocketMQ's messageDelayLevel: the delay of level n
// (1-based) is the n-th entry.
const DefaultDelayLevels = delaylevel.Default

// ParseDelayLevels parses a delay level table: whitespace-separated positive
// integers each followed by a unit — ms, s, m, h or d — as in
// DefaultDelayLevels. Element i of the result is the delay of level i+1. An
// empty table, a zero or negative delay, a missing or unknown unit and a
// fraction ("1.5s") are errors.
func ParseDelayLevels(s string) ([]time.Duration, error) {
	return delaylevel.Parse(s)
}

// ParseDeleteWhen parses RocketMQ's deleteWhen: hours of the day ("00"–"23",
// one or two digits) separated by ';', during which expired commit-log
// segments are deleted. The hours are returned in the order given.
func ParseDeleteWhen(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no hours")
	}
	var hours []int
	for _, part := range strings.Split(s, ";") {
		p := strings.TrimSpace(part)
		h, err := strconv.Atoi(p)
		if err != nil || len(p) > 2 || h < 0 || h > 23 {
			return nil, fmt.Errorf("hour %q: want 00 to 23", part)
		}
		hours = append(hours, h)
	}
	return hours, nil
}

// splitList splits a list given as one string on ',' and ';', trimming
// spaces and dropping empty elements.
func splitList(s string) []string {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' })
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// splitHostPort splits a host:port address and parses the port (0–65535).
func splitHostPort(addr string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err = strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", p)
	}
	return host, port, nil
}

// checkListenAddr accepts a host:port to listen on: the host may be empty
// (every interface) and the port may be 0 (any free port).
func checkListenAddr(key, addr string) error {
	host, _, err := splitHostPort(addr)
	if err != nil {
		return invalid(key, "must be host:port, got %q: %v", addr, err)
	}
	if strings.IndexFunc(host, unicode.IsSpace) >= 0 {
		return invalid(key, "host must not contain spaces, got %q", addr)
	}
	return nil
}

// checkDialAddr accepts a host:port that other processes connect to: the
// host must be present and specific (not 0.0.0.0 or ::) and the port non-zero.
func checkDialAddr(key, addr string) error {
	host, port, err := splitHostPort(addr)
	if err != nil {
		return invalid(key, "must be host:port, got %q: %v", addr, err)
	}
	if host == "" || strings.IndexFunc(host, unicode.IsSpace) >= 0 {
		return invalid(key, "must name a host to connect to, got %q", addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return invalid(key, "must name a specific host, not %q", host)
	}
	if port == 0 {
		return invalid(key, "port must not be 0, got %q", addr)
	}
	return nil
}

func checkPositiveDuration(key string, d time.Duration) error {
	if d <= 0 {
		return invalid(key, "must be a positive duration, got %s", d)
	}
	return nil
}

func checkPositive(key string, n int64) error {
	if n <= 0 {
		return invalid(key, "must be greater than 0, got %d", n)
	}
	return nil
}

// checkPercent accepts a ratio in percent, 1–100.
func checkPercent(key string, n int) error {
	if n < 1 || n > 100 {
		return invalid(key, "must be a percentage from 1 to 100, got %d", n)
	}
	return nil
}

// Frame size bounds: a frame must hold a request header, and its length field
// is a signed 32-bit integer.
const (
	minFrameSize = 64 * KiB
	maxFrameSize = 1 * GiB
)

func checkFrameSize(key string, n int64) error {
	if n < minFrameSize || n > maxFrameSize {
		return invalid(key, "must be from %s to %s, got %d", FormatByteSize(minFrameSize), FormatByteSize(maxFrameSize), n)
	}
	return nil
}

// checkName accepts a broker or cluster name: non-empty, at most 127 bytes,
// letters, digits, '-', '_', '.', '%' and '|' (the characters RocketMQ allows
// in topic names, plus '.').
func checkName(key, name string) error {
	if name == "" {
		return invalid(key, "must not be empty")
	}
	if len(name) > 127 {
		return invalid(key, "must be at most 127 bytes, got %d", len(name))
	}
	for _, r := range name {
		ok := r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_.%|", r))
		if !ok {
			return invalid(key, "may contain only letters, digits and - _ . %% |, got %q", name)
		}
	}
	return nil
}
