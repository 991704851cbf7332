package offsets

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/broker/internal/metafile"
	"github.com/ferrymq/ferry/internal/fastjson"
)

// File names under Options.Dir (see the package doc for the format).
const (
	configDir = "config"
	fileName  = "consumerOffset.json"
)

// fileIn is the shape read from consumerOffset.json (after fastjson.QuoteBareKeys).
type fileIn struct {
	OffsetTable map[string]map[string]json.RawMessage `json:"offsetTable"`
}

// entry is one offset of a snapshot being written.
type entry struct {
	key    Key
	offset int64
}

// encodeEntries renders entries as the contents of consumerOffset.json,
// sorted by topic@group key and queue id. It sorts entries in place.
func encodeEntries(entries []entry) []byte {
	atKey := func(k Key) string { return k.Topic + "@" + k.Group }
	slices.SortFunc(entries, func(a, b entry) int {
		if c := strings.Compare(a.key.Topic, b.key.Topic); c != 0 {
			return c
		}
		if c := strings.Compare(a.key.Group, b.key.Group); c != 0 {
			return c
		}
		return cmp.Compare(a.key.QueueID, b.key.QueueID)
	})
	b := make([]byte, 0, 32+len(entries)*24)
	b = append(b, "{\n\t\"offsetTable\":{"...)
	for i, e := range entries {
		first := i == 0 || atKey(entries[i-1].key) != atKey(e.key)
		if first {
			if i > 0 {
				b = append(b, "},"...)
			}
			b = append(b, "\n\t\t"...)
			name, _ := json.Marshal(atKey(e.key)) // marshalling a string cannot fail
			b = append(b, name...)
			b = append(b, ":{"...)
		} else {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(e.key.QueueID), 10)
		b = append(b, "\":"...)
		b = strconv.AppendInt(b, e.offset, 10)
	}
	if len(entries) > 0 {
		b = append(b, "}\n\t"...)
	}
	return append(b, "}\n}\n"...)
}

// decodeTable parses the contents of consumerOffset.json, written by Ferry
// or by RocketMQ (fastjson bare integer keys). The error wraps ErrCorrupt
// when data is not a JSON object with an object-of-objects offsetTable;
// unusable entries are skipped and reported through log.
func decodeTable(data []byte, log *zerolog.Logger) (map[Key]int64, error) {
	var in fileIn
	if err := metafile.DecodeObject(data, &in, fastjson.QuoteBareKeys); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	table := make(map[Key]int64)
	skipped := 0
	for atKey, queues := range in.OffsetTable {
		topic, group, ok := strings.Cut(atKey, "@")
		if !ok || topic == "" || group == "" {
			skipped += max(1, len(queues))
			continue
		}
		for q, raw := range queues {
			id, err := strconv.ParseInt(q, 10, 32)
			if err != nil || id < 0 {
				skipped++
				continue
			}
			off, err := strconv.ParseInt(string(raw), 10, 64)
			if err != nil || off < 0 {
				skipped++
				continue
			}
			table[Key{Group: group, Topic: topic, QueueID: int32(id)}] = off
		}
	}
	if skipped > 0 {
		log.Warn().Int("skipped", skipped).Msg("offsets: skipped unusable consumer offset entries")
	}
	return table, nil
}
