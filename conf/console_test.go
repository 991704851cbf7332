package conf

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// hashA is the shape of a bcrypt hash (console.users does not check more than the shape).
const hashA = "$2a$10$abcdefghijklmnopqrstuuQ5e7KrvHPUQmLXBVHvTyiHo1vRv4ZQe"

func TestConsoleDefaultsOff(t *testing.T) {
	c := DefaultConsoleConfig()
	require.False(t, c.Enable)
	require.Empty(t, c.Users)
	require.False(t, c.ACLAccounts)
	require.Equal(t, "8h0m0s", c.SessionTTL.String())
}

func TestConsoleUsersFromEnv(t *testing.T) {
	cfg, err := Load(LoadOptions{LookupEnv: envMap(map[string]string{
		"FERRY_CONSOLE_ENABLE": "true",
		"FERRY_CONSOLE_USERS":  "alice:readwrite:" + hashA + ";bob:readonly:" + hashA,
	})})
	require.NoError(t, err)
	require.True(t, cfg.Console.Enable)
	require.Equal(t, []string{"alice:readwrite:" + hashA, "bob:readonly:" + hashA}, cfg.Console.Users)
}

func TestConsoleValidate(t *testing.T) {
	for name, users := range map[string][]string{
		"no role":  {"alice:" + hashA},
		"bad role": {"alice:admin:" + hashA},
		"no name":  {":readonly:" + hashA},
		"no hash":  {"alice:readonly:secret"},
	} {
		c := DefaultConsoleConfig()
		c.Users = users
		err := c.Validate()
		require.ErrorIs(t, err, ErrInvalidConfig, name)
		require.Contains(t, err.Error(), "console.users", name)
		require.NotContains(t, err.Error(), "secret", "a password written by mistake is not echoed")
	}
	c := DefaultConsoleConfig()
	c.SessionTTL = 0
	require.ErrorIs(t, c.Validate(), ErrInvalidConfig)

	cfg := DefaultConfig()
	cfg.Console.ACLAccounts = true
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrInvalidConfig)
	require.Contains(t, err.Error(), "broker.aclFile")
}
