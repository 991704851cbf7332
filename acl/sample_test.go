package acl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The sample accounts file the production broker samples point at loads.
func TestSampleFileLoads(t *testing.T) {
	a, err := LoadFile("../conf/plain_acl.yml")
	require.NoError(t, err)
	require.Equal(t, 2, a.NumAccounts())
}
