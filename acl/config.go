package acl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/ferrymq/ferry/protocol"
)

// MinKeyLength is the shortest access key and secret key accepted: RocketMQ refuses
// keys whose length is <= 6 (AclConstants.ACCESS_KEY_MIN_LENGTH and
// SECRET_KEY_MIN_LENGTH are 6, compared with "<="), so a key needs at least 7
// characters.
const MinKeyLength = 7

// Config is the content of a plain_acl.yml file (RocketMQ ACL 1.0). Build an [ACL] from
// it with [New]; [Parse] and [LoadFile] decode and build in one step.
type Config struct {
	// GlobalWhiteRemoteAddresses are address patterns whose requests are allowed without
	// any credentials. Blank entries match nothing.
	GlobalWhiteRemoteAddresses []string `yaml:"globalWhiteRemoteAddresses,omitempty"`
	// Accounts are the accounts; access keys are unique.
	Accounts []AccountConfig `yaml:"accounts,omitempty"`
}

// AccountConfig is one entry of the accounts list.
type AccountConfig struct {
	// AccessKey identifies the account; at least MinKeyLength characters.
	AccessKey string `yaml:"accessKey"`
	// SecretKey signs the account's requests; at least MinKeyLength characters.
	SecretKey string `yaml:"secretKey"`
	// WhiteRemoteAddress is one address pattern (which may itself be a comma list). A
	// request naming this account from a matching address is allowed without a
	// signature and without permission checks, as in RocketMQ. Empty: no such address.
	WhiteRemoteAddress string `yaml:"whiteRemoteAddress,omitempty"`
	// Admin accounts may use the admin-only request codes and every topic and group.
	Admin bool `yaml:"admin,omitempty"`
	// DefaultTopicPerm applies to topics not in TopicPerms: DENY, PUB, SUB, PUB|SUB or
	// SUB|PUB. Empty means DENY, as in RocketMQ.
	DefaultTopicPerm string `yaml:"defaultTopicPerm,omitempty"`
	// DefaultGroupPerm applies to consumer groups not in GroupPerms; empty means DENY.
	DefaultGroupPerm string `yaml:"defaultGroupPerm,omitempty"`
	// TopicPerms are "topic=PERM" entries, one per topic.
	TopicPerms []string `yaml:"topicPerms,omitempty"`
	// GroupPerms are "group=PERM" entries, one per consumer group.
	GroupPerms []string `yaml:"groupPerms,omitempty"`
}

// fileConfig is Config plus the keys RocketMQ's tools write that Ferry ignores.
type fileConfig struct {
	GlobalWhiteRemoteAddresses []string        `yaml:"globalWhiteRemoteAddresses"`
	Accounts                   []AccountConfig `yaml:"accounts"`
	// DataVersion is written by RocketMQ's updateAclConfig tooling; ignored.
	DataVersion yaml.Node `yaml:"dataVersion"`
}

// DecodeConfig decodes a plain_acl.yml document without validating it beyond YAML
// types. Unknown keys are refused (a misspelt key would otherwise silently drop a
// rule), except RocketMQ's dataVersion, which is ignored. Scalars decode into strings
// as written (secretKey: 12345678 is the string "12345678"). An empty document is
// refused: a file caught half-written must not turn into "no accounts". Errors wrap
// [ErrInvalidConfig].
func DecodeConfig(data []byte) (Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return Config{}, &ConfigError{Problem: "empty document (write `accounts: []` for no accounts)"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var fc fileConfig
	if err := dec.Decode(&fc); err != nil {
		if errors.Is(err, io.EOF) {
			return Config{}, &ConfigError{Problem: "empty document (write `accounts: []` for no accounts)"}
		}
		return Config{}, &ConfigError{Problem: "YAML", Err: err}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, &ConfigError{Problem: "more than one YAML document"}
	}
	return Config{GlobalWhiteRemoteAddresses: fc.GlobalWhiteRemoteAddresses, Accounts: fc.Accounts}, nil
}

// Parse decodes and validates a plain_acl.yml document and builds its ACL.
func Parse(data []byte) (*ACL, error) {
	c, err := DecodeConfig(data)
	if err != nil {
		return nil, err
	}
	return New(c)
}

// LoadFile reads, decodes and validates the accounts file at path.
func LoadFile(path string) (*ACL, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("acl: read accounts file: %w", err)
	}
	return Parse(data)
}

// Validate reports every problem of the config, joined; each is a [*ConfigError]
// wrapping [ErrInvalidConfig]. It is what [New] checks.
func (c *Config) Validate() error {
	_, err := compile(c)
	return err
}

// compiled is the checked, indexed form of a Config.
type compiled struct {
	global   []AddressPattern
	accounts map[string]*account
}

// compile validates c and builds its rule set, collecting every problem.
func compile(c *Config) (*compiled, error) {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, &ConfigError{Path: path, Problem: fmt.Sprintf(format, args...)})
	}
	out := &compiled{accounts: make(map[string]*account, len(c.Accounts))}
	for i, s := range c.GlobalWhiteRemoteAddresses {
		p, err := ParseAddressPattern(s)
		if err != nil {
			bad("globalWhiteRemoteAddresses["+strconv.Itoa(i)+"]", "%v", err)
			continue
		}
		if p.kind != patternNone {
			out.global = append(out.global, p)
		}
	}
	first := make(map[string]int, len(c.Accounts))
	for i := range c.Accounts {
		ac := &c.Accounts[i]
		path := "accounts[" + strconv.Itoa(i) + "]"
		if ac.AccessKey != "" {
			path += " (accessKey " + quote(ac.AccessKey) + ")"
		}
		a, aerrs := compileAccount(ac, path)
		errs = append(errs, aerrs...)
		if ac.AccessKey == "" {
			continue
		}
		if j, dup := first[ac.AccessKey]; dup {
			bad(path+".accessKey", "duplicate of accounts[%d]", j)
			continue
		}
		first[ac.AccessKey] = i
		if len(aerrs) == 0 {
			out.accounts[ac.AccessKey] = a
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// compileAccount checks one account and builds its compiled form.
func compileAccount(ac *AccountConfig, path string) (*account, []error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &ConfigError{Path: path + "." + field, Problem: fmt.Sprintf(format, args...)})
	}
	checkKey := func(field, v string) {
		switch {
		case v == "":
			bad(field, "missing")
		case utf8.RuneCountInString(v) < MinKeyLength:
			bad(field, "shorter than %d characters", MinKeyLength)
		case strings.TrimSpace(v) != v:
			bad(field, "has leading or trailing blanks")
		case !utf8.ValidString(v):
			bad(field, "not valid UTF-8")
		}
	}
	checkKey("accessKey", ac.AccessKey)
	checkKey("secretKey", ac.SecretKey) // never echo the value
	a := &account{
		accessKey: ac.AccessKey,
		admin:     ac.Admin,
		defTopic:  PermDeny,
		defGroup:  PermDeny,
	}
	a.secret = []byte(ac.SecretKey)
	if w, err := ParseAddressPattern(ac.WhiteRemoteAddress); err != nil {
		bad("whiteRemoteAddress", "%v", err)
	} else {
		a.white = w
	}
	if strings.TrimSpace(ac.DefaultTopicPerm) != "" {
		p, err := ParsePerm(ac.DefaultTopicPerm)
		if err != nil {
			bad("defaultTopicPerm", "%s: %v", quote(ac.DefaultTopicPerm), err)
		}
		a.defTopic = p
	}
	if strings.TrimSpace(ac.DefaultGroupPerm) != "" {
		p, err := ParsePerm(ac.DefaultGroupPerm)
		if err != nil {
			bad("defaultGroupPerm", "%s: %v", quote(ac.DefaultGroupPerm), err)
		}
		a.defGroup = p
	}
	a.topics = compilePerms(ac.TopicPerms, "topicPerms", true, bad)
	a.groups = compilePerms(ac.GroupPerms, "groupPerms", false, bad)
	return a, errs
}

// compilePerms parses "name=PERM" entries into a map, reporting bad entries through bad.
func compilePerms(entries []string, field string, topics bool, bad func(field, format string, args ...any)) map[string]Perm {
	if len(entries) == 0 {
		return nil
	}
	m := make(map[string]Perm, len(entries))
	for i, e := range entries {
		at := field + "[" + strconv.Itoa(i) + "]"
		name, word, ok := strings.Cut(e, "=")
		name = strings.TrimSpace(name)
		if !ok || strings.Contains(word, "=") {
			bad(at, "%s is not name=PERM", quote(e))
			continue
		}
		p, err := ParsePerm(word)
		if err != nil {
			bad(at, "permission %s: %v", quote(strings.TrimSpace(word)), err)
			continue
		}
		var verr error
		if topics {
			verr = protocol.ValidateTopic(name)
			if verr == nil && protocol.IsRetryTopic(name) {
				verr = errors.New("a %RETRY% topic is governed by its group: list the group in groupPerms")
			}
		} else {
			verr = protocol.ValidateGroup(name)
			if verr == nil && protocol.IsRetryTopic(name) {
				verr = errors.New("a group name cannot start with %RETRY%")
			}
		}
		if verr != nil {
			bad(at, "%v", verr)
			continue
		}
		if _, dup := m[name]; dup {
			bad(at, "%s is listed twice", quote(name))
			continue
		}
		m[name] = p
	}
	return m
}
