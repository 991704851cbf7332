package main

import (
	"slices"

	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/launch"
)

// applyStandaloneDefaults gives the settings that were left at their built-in defaults
// the defaults of `ferry standalone` (launch.StandaloneDefaults: smaller commit-log
// segments, the HTTP listener on), in cfg and in the rows `ferry config standalone` prints, so that the command
// shows what the server will use.
func applyStandaloneDefaults(cfg *conf.Config, settings []conf.Setting) ([]conf.Setting, error) {
	explicit := map[string]bool{}
	for _, s := range settings {
		explicit[s.Key] = s.Source.Kind != conf.SourceDefault
	}
	changed, err := launch.StandaloneDefaults(cfg, func(key string) bool { return explicit[key] }, mmap.OSFS{})
	if err != nil || len(changed) == 0 {
		return settings, err
	}
	for i := range settings {
		if !slices.Contains(changed, settings[i].Key) {
			continue
		}
		s := &settings[i]
		switch s.Key {
		case launch.KeySegmentSize:
			s.Value = conf.FormatByteSize(cfg.Broker.CommitLogSegmentSize)
			s.Default = conf.FormatByteSize(launch.StandaloneSegmentSize)
			if cfg.Broker.CommitLogSegmentSize == launch.StandaloneSegmentSize {
				s.Meaning += " (standalone default)"
			} else {
				s.Meaning += " (standalone: the size of the store in broker.dataDir)"
			}
		case launch.KeyHTTPListen:
			s.Value, s.Default = cfg.Broker.HTTPListen, launch.StandaloneHTTPListen
			s.Meaning += " (standalone default)"
		}
	}
	return settings, nil
}
