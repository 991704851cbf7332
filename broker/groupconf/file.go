package groupconf

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker/internal/metafile"
	"github.com/ferrymq/ferry/protocol"
)

// File names under Options.Dir (see the package doc for the format).
const (
	configDir = "config"
	fileName  = "subscriptionGroup.json"
)

// fileIn is the shape read from subscriptionGroup.json; entries are decoded
// one by one so that one bad entry does not make the whole file unreadable.
type fileIn struct {
	SubscriptionGroupTable map[string]json.RawMessage `json:"subscriptionGroupTable"`
	DataVersion            json.RawMessage            `json:"dataVersion"`
}

// encodeTable renders t as the contents of subscriptionGroup.json.
func encodeTable(t *Table) ([]byte, error) {
	b, err := metafile.MarshalIndent(t.shape())
	if err != nil {
		return nil, fmt.Errorf("groupconf: %w", err)
	}
	return b, nil
}

// decodeTable parses the contents of subscriptionGroup.json. The error wraps
// ErrCorrupt when data is not a JSON object of the right shape; unusable
// entries are skipped and reported through log.
func decodeTable(data []byte, log *zerolog.Logger) (*Table, error) {
	var in fileIn
	if err := metafile.DecodeObject(data, &in, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	t := &Table{SubscriptionGroupTable: make(map[string]Config, len(in.SubscriptionGroupTable))}
	if len(in.DataVersion) > 0 {
		if err := json.Unmarshal(in.DataVersion, &t.DataVersion); err != nil {
			log.Warn().Err(err).Msg("groupconf: ignoring unreadable dataVersion")
			t.DataVersion = protocol.DataVersion{}
		}
	}
	if c := t.DataVersion.Counter; c < 0 || c > math.MaxInt32 {
		log.Warn().Int64("counter", c).Msg("groupconf: dataVersion counter outside int32, restarting at 0")
		t.DataVersion.Counter = 0
	}
	for name, raw := range in.SubscriptionGroupTable {
		var cfg Config
		if err := json.Unmarshal(raw, &cfg); err != nil {
			log.Warn().Err(err).Str("group", name).Msg("groupconf: skipping undecodable group")
			continue
		}
		cfg.GroupName = name
		if err := cfg.Validate(); err != nil {
			log.Warn().Err(err).Str("group", name).Msg("groupconf: skipping invalid group")
			continue
		}
		t.SubscriptionGroupTable[name] = cfg
	}
	return t, nil
}
