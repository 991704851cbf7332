package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/consumequeue"
)

// ScrubReport is what Scrub found.
type ScrubReport struct {
	// From and To bound the commit-log range scrubbed.
	From, To int64
	// Records and Bytes count the valid records checked.
	Records, Bytes int64
	// Damaged counts damaged commit-log ranges (records that fail their checks, the body
	// CRC included); DamagedAt lists the first ones' offsets.
	Damaged   int64
	DamagedAt []int64
	// Quarantined counts ranges recovery set aside earlier.
	Quarantined int64
	// Units counts the consume-queue units checked against their records; BadUnits those
	// that point elsewhere and MissingUnits records their queue lacks.
	Units, BadUnits, MissingUnits int64
	// Elapsed is how long the scrub took.
	Elapsed time.Duration
}

// Clean reports whether the scrub found nothing wrong (earlier quarantined ranges aside).
func (r ScrubReport) Clean() bool { return r.Damaged == 0 && r.BadUnits == 0 && r.MissingUnits == 0 }

// maxDamagedAt bounds ScrubReport.DamagedAt.
const maxDamagedAt = 100

// Scrub reads the whole commit log, checking every record as recovery does (body CRC
// included), and checks that every consumable record below the dispatched offset is in
// its consume queue at its queue offset. It changes nothing and runs alongside the store's
// work; bytesPerSec > 0 paces it so it does not starve the broker's reads. Damage it finds
// is logged; recovery quarantines it at the next start only when it is after the
// checkpoint or among the records recovery re-dispatches, so an operator who sees a dirty
// report should stop the broker and run ferry scrub, which validates everything
// (docs/operations.md).
func (s *Store) Scrub(ctx context.Context, bytesPerSec int64) (ScrubReport, error) {
	start := time.Now()
	r := ScrubReport{From: s.cl.MinOffset(), To: s.dispatched.Load()}
	floor := min(r.To, s.stallFloor.Load())
	var paced int64
	err := s.cl.Scan(ctx, r.From, r.To, func(ev commitlog.ScanEvent) bool {
		if bytesPerSec > 0 {
			if paced += ev.Size; paced >= bytesPerSec/10 {
				paced = 0
				select {
				case <-ctx.Done():
					return false
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
		switch {
		case ev.Quarantined:
			r.Quarantined++
		case ev.Err != nil:
			r.Damaged++
			if len(r.DamagedAt) < maxDamagedAt {
				r.DamagedAt = append(r.DamagedAt, ev.Offset)
			}
			s.log.Error().Err(ev.Err).Int64("from", ev.Offset).Int64("bytes", ev.Size).Msg("scrub: damaged commit-log range")
		default:
			r.Records++
			r.Bytes += ev.Size
			if ev.Offset < floor && queued(ev.Record) && !s.deleted(ev.Record.Topic, ev.Offset) {
				s.scrubUnit(&r, ev)
			}
		}
		return true
	})
	r.Elapsed = time.Since(start)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return r, fmt.Errorf("store: scrub: %w", err)
	}
	ev := s.log.Info()
	if !r.Clean() {
		ev = s.log.Error()
	}
	ev.Int64("records", r.Records).Int64("bytes", r.Bytes).Int64("damaged", r.Damaged).
		Int64("badUnits", r.BadUnits).Int64("missingUnits", r.MissingUnits).Int64("quarantined", r.Quarantined).
		Dur("took", r.Elapsed).Msg("scrub finished")
	return r, nil
}

// scrubUnit checks the consume-queue unit of a consumable record.
func (s *Store) scrubUnit(r *ScrubReport, ev commitlog.ScanEvent) {
	rec := ev.Record
	q, err := s.cqs.Queue(string(rec.Topic), rec.QueueID, false)
	if err != nil {
		r.MissingUnits++
		return
	}
	if rec.QueueOffset < q.MinOffset() {
		return // cleaned from the queue's start
	}
	r.Units++
	u, err := q.Get(rec.QueueOffset)
	switch {
	case errors.Is(err, consumequeue.ErrOffsetOutOfRange):
		r.MissingUnits++
		s.log.Error().Str("queue", q.String()).Int64("queueOffset", rec.QueueOffset).Int64("phy", ev.Offset).
			Msg("scrub: a record is missing from its consume queue")
	case err != nil:
		r.BadUnits++
	case u.Offset != ev.Offset || int64(u.Size) != ev.Size:
		r.BadUnits++
		s.log.Error().Str("queue", q.String()).Int64("queueOffset", rec.QueueOffset).Int64("phy", ev.Offset).
			Int64("unitPhy", u.Offset).Msg("scrub: a consume-queue unit does not point at its record")
	}
}

// scrubLoop runs Scrub every ScrubInterval until Shutdown.
func (s *Store) scrubLoop() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // owned: ends when the loop returns (cancel) or the store stops
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.every(s.opts.ScrubInterval, func() {
		r, err := s.Scrub(ctx, s.opts.ScrubBytesPerSec)
		if err != nil && ctx.Err() == nil {
			s.log.Error().Err(err).Msg("scrub failed")
		}
		s.scrubs.Add(1)
		s.scrubDamage.Add(r.Damaged + r.BadUnits + r.MissingUnits)
	})
}
