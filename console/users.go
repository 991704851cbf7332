package console

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"

	"github.com/ferrymq/ferry/acl"
)

// Role is what an account may do in the console.
type Role string

// The roles.
const (
	// RoleReadOnly sees every page and changes nothing.
	RoleReadOnly Role = "readonly"
	// RoleReadWrite may also create topics, reset offsets and resend dead letters.
	RoleReadWrite Role = "readwrite"
)

// ErrInvalidUser is wrapped by the errors of ParseUser.
var ErrInvalidUser = errors.New("console: invalid user")

// User is an account that may log in.
type User struct {
	// Name is the login name.
	Name string
	// Role is what the account may do.
	Role Role
	// Hash is the bcrypt hash of the password (console.users). Either Hash or Secret is
	// set.
	Hash []byte
	// Secret is the password itself, compared in constant time: an ACL account's
	// secretKey (console.aclAccounts), which the accounts file holds in clear anyway.
	Secret string
}

// HashCost is the bcrypt cost HashPassword uses.
const HashCost = 12

// minPassword is the shortest password HashPassword accepts.
const minPassword = 8

// HashPassword returns the bcrypt hash of password for console.users. A password
// shorter than 8 bytes, or longer than bcrypt's 72, is refused.
func HashPassword(password string) (string, error) {
	if len(password) < minPassword {
		return "", fmt.Errorf("%w: a password needs at least %d characters", ErrInvalidUser, minPassword)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), HashCost)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidUser, err)
	}
	return string(h), nil
}

// ParseUser reads one console.users entry: NAME:ROLE:BCRYPT-HASH, ROLE being readwrite
// or readonly (a bcrypt hash holds no ':'). Errors wrap ErrInvalidUser and never quote
// the hash.
func ParseUser(entry string) (User, error) {
	name, rest, ok1 := strings.Cut(strings.TrimSpace(entry), ":")
	role, hash, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || name == "" {
		return User{}, fmt.Errorf("%w: want NAME:ROLE:BCRYPT-HASH, got an entry with %d ':'", ErrInvalidUser, strings.Count(entry, ":"))
	}
	u := User{Name: name, Role: Role(role), Hash: []byte(hash)}
	if err := u.check(); err != nil {
		return User{}, err
	}
	return u, nil
}

// check validates the user's name, role and credential.
func (u User) check() error {
	switch {
	case u.Name == "" || strings.ContainsAny(u.Name, ": \t\r\n"):
		return fmt.Errorf("%w: name %q: want a non-empty word without ':'", ErrInvalidUser, u.Name)
	case u.Role != RoleReadOnly && u.Role != RoleReadWrite:
		return fmt.Errorf("%w: user %s: role %q: want %s or %s", ErrInvalidUser, u.Name, u.Role, RoleReadWrite, RoleReadOnly)
	case len(u.Hash) == 0 && u.Secret == "":
		return fmt.Errorf("%w: user %s has no password hash", ErrInvalidUser, u.Name)
	case len(u.Hash) > 0:
		if _, err := bcrypt.Cost(u.Hash); err != nil {
			return fmt.Errorf("%w: user %s: the hash is no bcrypt hash (make one with hash-password): %w", ErrInvalidUser, u.Name, err)
		}
	}
	return nil
}

// UsersFromACL makes a console account of every account of an ACL accounts file: the
// access key logs in with the secret key as password; admin accounts are read-write,
// the others read-only.
func UsersFromACL(c acl.Config) []User {
	out := make([]User, 0, len(c.Accounts))
	for _, a := range c.Accounts {
		role := RoleReadOnly
		if a.Admin {
			role = RoleReadWrite
		}
		out = append(out, User{Name: a.AccessKey, Role: role, Secret: a.SecretKey})
	}
	return out
}

// dummyHash is compared against when a login names no account, so that a wrong name
// costs what a wrong password does (a cost-12 hash of a password no account has).
const dummyHash = "$2a$12$8BVtvzaDcpm5dEHaS9o43ec9GzkMxbDcQhT1sZM0OIXWlVO/J.ijC"

// verify reports whether password is u's; ok false runs a bcrypt comparison all the
// same.
func (u User) verify(password string, ok bool) bool {
	switch {
	case !ok:
		_ = bcrypt.CompareHashAndPassword([]byte(dummyHash), []byte(password))
		return false
	case len(u.Hash) > 0:
		return bcrypt.CompareHashAndPassword(u.Hash, []byte(password)) == nil
	default:
		// The same bcrypt work as the other cases, so that the time of an answer does not
		// tell an ACL account from a console.users account or from no account.
		_ = bcrypt.CompareHashAndPassword([]byte(dummyHash), []byte(password))
		return subtle.ConstantTimeCompare([]byte(u.Secret), []byte(password)) == 1
	}
}
