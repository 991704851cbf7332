package topicconf

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker/internal/metafile"
	"github.com/ferrymq/ferry/protocol"
)

// File names under Options.Dir (see the package doc for the format).
const (
	configDir = "config"
	fileName  = "topics.json"
)

// fileOut is the shape written to topics.json.
type fileOut struct {
	DataVersion      protocol.DataVersion            `json:"dataVersion"`
	TopicConfigTable map[string]protocol.TopicConfig `json:"topicConfigTable"`
}

// fileIn is the shape read from topics.json; entries are decoded one by one
// so that one bad entry does not make the whole file unreadable.
type fileIn struct {
	DataVersion      json.RawMessage            `json:"dataVersion"`
	TopicConfigTable map[string]json.RawMessage `json:"topicConfigTable"`
}

// encodeTable renders t as the contents of topics.json.
func encodeTable(t *table) ([]byte, error) {
	topics := t.topics
	if topics == nil {
		topics = map[string]protocol.TopicConfig{}
	}
	b, err := metafile.MarshalIndent(fileOut{DataVersion: t.version, TopicConfigTable: topics})
	if err != nil {
		return nil, fmt.Errorf("topicconf: %w", err)
	}
	return b, nil
}

// decodeTable parses the contents of topics.json. The error wraps ErrCorrupt
// when data is not a JSON object with an object-valued topicConfigTable;
// entries that are unusable are skipped and reported through log.
func decodeTable(data []byte, log *zerolog.Logger) (*table, error) {
	var in fileIn
	if err := metafile.DecodeObject(data, &in, nil); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	t := &table{topics: make(map[string]protocol.TopicConfig, len(in.TopicConfigTable))}
	if len(in.DataVersion) > 0 {
		if err := json.Unmarshal(in.DataVersion, &t.version); err != nil {
			log.Warn().Err(err).Msg("topicconf: ignoring unreadable dataVersion")
			t.version = protocol.DataVersion{}
		}
	}
	for name, raw := range in.TopicConfigTable {
		var cfg protocol.TopicConfig
		if err := json.Unmarshal(raw, &cfg); err != nil {
			log.Warn().Err(err).Str("topic", name).Msg("topicconf: skipping undecodable topic")
			continue
		}
		cfg.TopicName = name
		normalize(&cfg)
		if err := validate(&cfg); err != nil {
			log.Warn().Err(err).Str("topic", name).Msg("topicconf: skipping invalid topic")
			continue
		}
		t.topics[name] = cfg
	}
	return t, nil
}

// cloneConfig returns cfg with its own attributes map.
func cloneConfig(cfg protocol.TopicConfig) protocol.TopicConfig {
	if cfg.Attributes != nil {
		cfg.Attributes = maps.Clone(cfg.Attributes)
	}
	return cfg
}
