package index

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestKeyHashBytesMatchesKeyHash(t *testing.T) {
	for _, k := range []string{"", "TopicA#order-1", "主题#键", "T#😀", "polygenelubricants"} {
		require.Equal(t, KeyHash(k), KeyHashBytes([]byte(k)), "%q", k)
		require.GreaterOrEqual(t, KeyHash(k), int32(0))
	}
}
