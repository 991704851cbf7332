package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/ferrymq/ferry/internal/fastjson"
	"github.com/ferrymq/ferry/protocol"
)

// Progress files, relative to Options.Dir.
const (
	configDir = "config"
	// delayOffsetFile holds the level cursors (RocketMQ's file and shape).
	delayOffsetFile = "delayOffset.json"
	// timerProgressFile holds the timer watermark and delivered ranges (Ferry's own).
	timerProgressFile = "timerProgress.json"
	// timerProgressVersion is the "version" written into timerProgressFile.
	timerProgressVersion = 1
)

// delayOffsets is the JSON shape of config/delayOffset.json (RocketMQ's
// ScheduleMessageService), keyed by delay level (not queue id); each value is the next
// consume-queue offset to deliver in that level's queue:
//
//	{"offsetTable":{"1":123,"2":0,...,"18":7}}
//
// Ferry writes quoted keys (standard JSON, which fastjson also reads) for every
// configured level and reads fastjson's bare integer keys ({1:123}) as well. Other
// fields, such as 5.x's "dataVersion", are ignored.
type delayOffsets struct {
	OffsetTable map[string]int64 `json:"offsetTable"`
}

// decodeDelayOffsets decodes config/delayOffset.json into level → offset.
func decodeDelayOffsets(data []byte) (map[int]int64, error) {
	var f delayOffsets
	if err := json.Unmarshal(fastjson.QuoteBareKeys(data), &f); err != nil {
		return nil, fmt.Errorf("schedule: %s: %w", delayOffsetFile, err)
	}
	out := make(map[int]int64, len(f.OffsetTable))
	for k, v := range f.OffsetTable {
		level, err := strconv.Atoi(k)
		if err != nil || level < 1 {
			return nil, fmt.Errorf("schedule: %s: key %q is not a delay level", delayOffsetFile, k)
		}
		out[level] = v
	}
	return out, nil
}

// encodeDelayOffsets encodes the cursors of levels 1..len(offsets) in level order.
func encodeDelayOffsets(offsets []int64) []byte {
	b := append(make([]byte, 0, 32+24*len(offsets)), `{"offsetTable":{`...)
	for i, off := range offsets {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendInt(b, int64(i+1), 10)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, off, 10)
	}
	return append(b, "}}\n"...)
}

// timerProgress is the JSON shape of config/timerProgress.json:
//
//	{"version":1,"watermark":120,"delivered":[[125,130],[131,132]]}
//
// watermark: every timer-queue offset below it has been delivered. delivered: the
// offsets at or above the watermark that have been delivered too, as sorted, disjoint
// half-open ranges [start, end) with watermark < start < end. On restart the timer queue
// is reloaded from the watermark, skipping the delivered ranges.
type timerProgress struct {
	Version   int        `json:"version"`
	Watermark int64      `json:"watermark"`
	Delivered [][2]int64 `json:"delivered"`
}

// decodeTimerProgress decodes and validates config/timerProgress.json. Ranges that touch
// each other or the watermark are merged.
func decodeTimerProgress(data []byte) (int64, []offsetRange, error) {
	var f timerProgress
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, nil, fmt.Errorf("schedule: %s: %w", timerProgressFile, err)
	}
	if f.Version != timerProgressVersion {
		return 0, nil, fmt.Errorf("schedule: %s: version %d, want %d", timerProgressFile, f.Version, timerProgressVersion)
	}
	if f.Watermark < 0 {
		return 0, nil, fmt.Errorf("schedule: %s: negative watermark %d", timerProgressFile, f.Watermark)
	}
	w, prev := f.Watermark, f.Watermark
	var done []offsetRange
	for _, r := range f.Delivered {
		if r[0] < prev || r[0] >= r[1] {
			return 0, nil, fmt.Errorf("schedule: %s: range [%d,%d) out of order or empty",
				timerProgressFile, r[0], r[1])
		}
		prev = r[1]
		if n := len(done); n > 0 && done[n-1].End == r[0] {
			done[n-1].End = r[1]
			continue
		}
		done = append(done, offsetRange{r[0], r[1]})
	}
	w, done = raiseWatermark(w, done, w)
	return w, done, nil
}

// encodeTimerProgress encodes a watermark and delivered ranges.
func encodeTimerProgress(w int64, done []offsetRange) []byte {
	b := append(make([]byte, 0, 64+32*len(done)), `{"version":`...)
	b = strconv.AppendInt(b, timerProgressVersion, 10)
	b = append(b, `,"watermark":`...)
	b = strconv.AppendInt(b, w, 10)
	b = append(b, `,"delivered":[`...)
	for i, r := range done {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, r.Start, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, r.End, 10)
		b = append(b, ']')
	}
	return append(b, "]}\n"...)
}

// readConfig reads a progress file; a missing file returns nil, nil.
func (s *Service) readConfig(name string) ([]byte, error) {
	data, err := s.opts.FS.ReadFile(filepath.Join(s.opts.Dir, configDir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: read %s: %w", name, err)
	}
	return data, nil
}

// loadLevelProgress sets the level cursors from delayOffset.json, clamped into each
// queue's [min, max]; levels without an entry start at the queue's min offset.
func (s *Service) loadLevelProgress() error {
	data, err := s.readConfig(delayOffsetFile)
	if err != nil {
		return err
	}
	var table map[int]int64
	if data != nil {
		if table, err = decodeDelayOffsets(data); err != nil {
			return err
		}
	}
	for level, off := range table {
		if level > len(s.levels) {
			s.log.Warn().Int("delayLevel", level).Int64("offset", off).
				Msg("delayOffset.json holds a level beyond the configured levels; its messages are not delivered")
		}
	}
	for _, l := range s.levels {
		qid := int32(l.level - 1)
		lo, hi := s.store.MinOffset(protocol.ScheduleTopic, qid), s.store.MaxOffset(protocol.ScheduleTopic, qid)
		off, ok := table[l.level]
		if !ok {
			off = lo
		}
		if c := min(max(off, lo), hi); c != off {
			s.log.Warn().Int("delayLevel", l.level).Int64("offset", off).Int64("clamped", c).
				Msg("delay offset outside the queue, clamped")
			off = c
		}
		l.cursor.Store(off)
	}
	return nil
}

// loadTimerProgress sets the timer watermark and delivered ranges from
// timerProgress.json, clamped to the queue's [min, max].
func (s *Service) loadTimerProgress() error {
	data, err := s.readConfig(timerProgressFile)
	if err != nil {
		return err
	}
	lo, hi := s.store.MinOffset(protocol.TimerTopic, 0), s.store.MaxOffset(protocol.TimerTopic, 0)
	w, done := lo, []offsetRange(nil)
	if data != nil {
		if w, done, err = decodeTimerProgress(data); err != nil {
			return err
		}
	}
	if w > hi {
		s.log.Warn().Int64("watermark", w).Int64("max", hi).Msg("timer watermark beyond the queue, clamped")
		w = hi
	}
	for i, r := range done {
		if r.Start >= hi {
			done = done[:i]
			break
		}
		done[i].End = min(r.End, hi)
	}
	w, done = raiseWatermark(w, done, lo)
	ts := s.timer
	ts.mu.Lock()
	ts.mu.watermark, ts.mu.done = w, done
	ts.mu.Unlock()
	ts.scanned = w
	return nil
}

// runFlusher persists progress every FlushInterval until Shutdown.
func (s *Service) runFlusher() {
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(s.opts.FlushInterval, time.Second))
		if err := s.persist(ctx); err != nil {
			s.log.Error().Err(err).Msg("persist schedule progress")
		}
		cancel()
	}
}

// persist writes both progress files if they changed. It first waits until the store has
// dispatched every delivered message the snapshot counts, so a file never claims a
// delivery the commit log can still lose.
func (s *Service) persist(ctx context.Context) error {
	s.persistMu.Lock()
	defer s.persistMu.Unlock()
	offsets := make([]int64, len(s.levels))
	for i, l := range s.levels {
		offsets[i] = l.cursor.Load()
	}
	ts := s.timer
	ts.mu.Lock()
	w, done := ts.mu.watermark, slices.Clone(ts.mu.done)
	ts.mu.Unlock()
	if phy := s.maxPhy.Load(); phy > 0 {
		if err := s.store.WaitDispatched(ctx, phy); err != nil {
			return fmt.Errorf("schedule: wait for deliveries to be stored: %w", err)
		}
	}
	var errs []error
	if b := encodeDelayOffsets(offsets); !bytes.Equal(b, s.persistMu.lastDelay) {
		if err := s.writeConfig(delayOffsetFile, b); err != nil {
			errs = append(errs, err)
		} else {
			s.persistMu.lastDelay = b
		}
	}
	if b := encodeTimerProgress(w, done); !bytes.Equal(b, s.persistMu.lastTimer) {
		if err := s.writeConfig(timerProgressFile, b); err != nil {
			errs = append(errs, err)
		} else {
			s.persistMu.lastTimer = b
		}
	}
	return errors.Join(errs...)
}

// writeConfig replaces a progress file atomically.
func (s *Service) writeConfig(name string, data []byte) error {
	if err := s.opts.FS.WriteFileAtomic(filepath.Join(s.opts.Dir, configDir, name), data); err != nil {
		return fmt.Errorf("schedule: write %s: %w", name, err)
	}
	return nil
}
