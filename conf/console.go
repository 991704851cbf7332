package conf

import (
	"strings"
	"time"
)

// ConsoleConfig is the "console" section: the web console for operators (package
// console), served under /console on the HTTP listener of `ferry broker` and `ferry
// standalone` (broker.httpListen). Login is always required and there is no default
// account: a console enabled without one refuses to start. See docs/console.md.
type ConsoleConfig struct {
	// Enable serves the console (it needs broker.httpListen, which standalone sets by
	// default). Off by default so that no process serves a login page nobody asked for.
	// Default false. Key console.enable, env FERRY_CONSOLE_ENABLE.
	Enable bool `mapstructure:"enable" default:"false" process:"command" meaning:"serve the web console at /console on broker.httpListen (needs an account)"`
	// Users are the console's own accounts, NAME:ROLE:BCRYPT-HASH each, ROLE being
	// readwrite or readonly (`ferryctl console hash-password` prints a hash). Default
	// "" (none). Key console.users, env FERRY_CONSOLE_USERS (';'-separated).
	Users []string `mapstructure:"users" default:"" process:"command" meaning:"console accounts NAME:ROLE:BCRYPT-HASH, ROLE readwrite or readonly"`
	// ACLAccounts lets the accounts of broker.aclFile log in too: the access key is the
	// name and the secret key the password; admin accounts are read-write, the others
	// read-only. The file is read when the console starts. Default false. Key
	// console.aclAccounts, env FERRY_CONSOLE_ACL_ACCOUNTS.
	ACLAccounts bool `mapstructure:"aclAccounts" default:"false" process:"command" meaning:"let the accounts of broker.aclFile log in (secret key as password; admin = read-write)"`
	// SessionTTL is how long a login lasts. Default 8h. Key console.sessionTTL, env
	// FERRY_CONSOLE_SESSION_TTL.
	SessionTTL time.Duration `mapstructure:"sessionTTL" default:"8h" check:"positive" process:"command" meaning:"how long a console login lasts"`
}

// DefaultConsoleConfig returns the default tags of ConsoleConfig: off, no account, 8 h
// sessions.
func DefaultConsoleConfig() ConsoleConfig {
	return defaultsOf[ConsoleConfig]()
}

// Validate checks the session length and the shape of each console.users entry (the
// console checks the hashes themselves when it starts). Errors never quote a hash.
func (c ConsoleConfig) Validate() error {
	if err := checkKeys(c, "console."); err != nil {
		return err
	}
	for i, u := range c.Users {
		name, rest, ok1 := strings.Cut(u, ":")
		role, hash, ok2 := strings.Cut(rest, ":")
		switch {
		case !ok1 || !ok2 || name == "":
			return invalid("console.users", "entry %d: want NAME:ROLE:BCRYPT-HASH", i+1)
		case role != "readwrite" && role != "readonly":
			return invalid("console.users", "entry %d (%s): role must be readwrite or readonly, got %q", i+1, name, role)
		case !strings.HasPrefix(hash, "$2"):
			return invalid("console.users", "entry %d (%s): want a bcrypt hash ($2a$…, from `ferryctl console hash-password`)", i+1, name)
		}
	}
	return nil
}
