package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/commitlog"
	"github.com/ferrymq/ferry/conf"
	"github.com/ferrymq/ferry/internal/mmap"
	"github.com/ferrymq/ferry/launch"
	"github.com/ferrymq/ferry/store"
)

// Exit statuses of ferry scrub.
const (
	scrubClean   = 0 // nothing damaged
	scrubFailed  = 1 // the scrub could not run (store in use, bad configuration, I/O error)
	scrubDamaged = 3 // damage was found (and repaired where the store can)
)

// runScrub is `ferry scrub`: it opens the store of a stopped broker with the whole commit
// log validated (damage quarantined, damaged derived files re-derived), checks every
// record and consume-queue unit, prints a report and closes the store cleanly.
func runScrub(ctx context.Context, cfg conf.Config, log zerolog.Logger, stdout io.Writer) (int, error) {
	o, err := launch.BrokerOptions(cfg.Broker, mmap.OSFS{}, log)
	if err != nil {
		return scrubFailed, err
	}
	so := o.Store
	so.VerifyAll, so.ScrubInterval = true, 0
	cl := filepath.Join(so.Dir, "commitlog")
	if ok, err := so.FS.Exists(cl); err != nil || !ok {
		return scrubFailed, fmt.Errorf("scrub: no store in %s (no commitlog directory): %w", so.Dir, errors.Join(err, fs.ErrNotExist))
	}
	// The store's segment size is fixed by its files, whatever the configuration says
	// (a --data-dir alone gets a default that fits no store made with another size).
	size, err := commitlog.SegmentSizeOf(so.FS, cl)
	if err != nil {
		return scrubFailed, fmt.Errorf("scrub: %w", err)
	}
	if size > 0 && size != so.SegmentSize {
		log.Info().Int64("segmentSize", size).Int64("configured", so.SegmentSize).
			Msg("scrub: using the segment size of the store's files")
		so.SegmentSize = size
	}
	s, err := store.Open(so)
	if err != nil {
		return scrubFailed, fmt.Errorf("scrub: %w", err)
	}
	r, serr := s.Scrub(ctx, 0)
	d := s.Damage()
	if err := errors.Join(serr, s.Shutdown(context.WithoutCancel(ctx))); err != nil {
		return scrubFailed, fmt.Errorf("scrub: %w", err)
	}
	fmt.Fprintf(stdout, "data directory   %s\n", so.Dir)
	fmt.Fprintf(stdout, "commit log       [%d, %d): %d records, %d bytes checked in %v\n", r.From, r.To, r.Records, r.Bytes, r.Elapsed.Round(1e6))
	fmt.Fprintf(stdout, "quarantined now  %d damaged ranges (bytes copied under %s/quarantine)\n", d.QuarantinedRanges, so.Dir)
	fmt.Fprintf(stdout, "quarantined      %d ranges in all\n", r.Quarantined)
	fmt.Fprintf(stdout, "consume queues   %d units checked, %d wrong, %d missing\n", r.Units, r.BadUnits, r.MissingUnits)
	if r.Damaged > 0 {
		fmt.Fprintf(stdout, "still damaged    %d ranges, first at %v\n", r.Damaged, r.DamagedAt)
	}
	if d.QuarantinedRanges > 0 || !r.Clean() {
		fmt.Fprintln(stdout, "result           DAMAGE FOUND (see the log lines above)")
		return scrubDamaged, nil
	}
	fmt.Fprintln(stdout, "result           clean")
	return scrubClean, nil
}
