package acl

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidConfig is wrapped by every error about the accounts file or a Config: a
// YAML syntax or type error, or a field that fails validation (see [*ConfigError]).
var ErrInvalidConfig = errors.New("acl: invalid config")

// ErrNoPermission is the root of every refusal [ACL.Check] returns; a broker answers
// any of them with NO_PERMISSION (16) and the error's text as the remark. The text never
// contains a secret key or a computed signature, and request-supplied strings in it are
// quoted and truncated.
var ErrNoPermission = errors.New("acl: no permission")

// The refusals of [ACL.Check]. Each wraps [ErrNoPermission]; the errors Check returns
// wrap one of these, so test them with errors.Is.
var (
	// ErrDuplicateField: the request's ext fields name one key twice. The signature
	// covers values in key order, so a repeated key would leave open which value the
	// signature and the handler see; such a request is refused, never guessed at.
	ErrDuplicateField = fmt.Errorf("%w: duplicate ext field", ErrNoPermission)
	// ErrAddressNotAllowed: the request carries no AccessKey and its address is not in
	// the global white list, so nothing allows it.
	ErrAddressNotAllowed = fmt.Errorf("%w: address not allowed", ErrNoPermission)
	// ErrUnknownAccessKey: no account has the request's AccessKey.
	ErrUnknownAccessKey = fmt.Errorf("%w: unknown access key", ErrNoPermission)
	// ErrBadSignature: the request has no Signature, or it does not match the account's
	// secret key over the request's ext fields and body.
	ErrBadSignature = fmt.Errorf("%w: bad signature", ErrNoPermission)
	// ErrAdminOnly: the request code needs an admin account.
	ErrAdminOnly = fmt.Errorf("%w: admin only", ErrNoPermission)
	// ErrDenied: the account lacks the permission a topic or group of the request needs;
	// the error is a [*DeniedError] naming the resource.
	ErrDenied = fmt.Errorf("%w: denied", ErrNoPermission)
)

// DeniedError is the refusal of one resource: the account's permission on it (explicit
// or default) does not grant what the request code needs. It wraps [ErrDenied].
type DeniedError struct {
	// AccessKey is the account's access key.
	AccessKey string
	// Code is the request code.
	Code int16
	// Kind is "topic" or "group".
	Kind string
	// Name is the topic or group name (a %RETRY% topic is reported as its group).
	Name string
	// Need is the permission the request needs.
	Need Perm
	// Owned is the account's permission on the resource.
	Owned Perm
	// Default reports whether Owned is the account's default permission (no explicit
	// topicPerms/groupPerms entry).
	Default bool
}

// Error describes the refusal without any secret.
func (e *DeniedError) Error() string {
	src := "explicit"
	if e.Default {
		src = "default"
	}
	return fmt.Sprintf("%v: access key %s needs %v on %s %s for %s, has %v (%s permission)",
		ErrDenied, quote(e.AccessKey), e.Need, e.Kind, quote(e.Name), codeName(e.Code), e.Owned, src)
}

// Unwrap returns [ErrDenied].
func (e *DeniedError) Unwrap() error { return ErrDenied }

// ConfigError is one problem of an accounts file or Config. It wraps [ErrInvalidConfig].
// Its text names the place (an account by index and access key, a field, a list entry)
// but never a secret key's value.
type ConfigError struct {
	// Path locates the problem, e.g. `accounts[1] (accessKey "RocketMQ").topicPerms[2]`
	// or `globalWhiteRemoteAddresses[0]`; empty for the file as a whole.
	Path string
	// Problem says what is wrong.
	Problem string
	// Err is the underlying error, if any (e.g. a YAML decoding error).
	Err error
}

// Error returns "acl: invalid config: <path>: <problem>".
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(ErrInvalidConfig.Error())
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns [ErrInvalidConfig] and the underlying error, if any.
func (e *ConfigError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidConfig, e.Err}
	}
	return []error{ErrInvalidConfig}
}

// maxQuoted bounds how much of a request-supplied string an error repeats.
const maxQuoted = 64

// quote returns s quoted with Go escapes, cut to maxQuoted bytes (on a rune boundary)
// with "..." appended when longer: safe to put in a remark or a log line.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := maxQuoted
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return fmt.Sprintf("%q...", s[:cut])
}
