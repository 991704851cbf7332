package store

import (
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/ferrymq/ferry/internal/mmap"
)

// diskGuard watches the file system holding the store and refuses writes while it is
// fuller than the configured ratio (or a write has just failed with ENOSPC). It resumes
// by itself at the next check that finds room.
type diskGuard struct {
	fs        mmap.FS
	dir       string
	fullRatio float64 // used fraction at which writes stop
	minFree   uint64  // free bytes below which writes stop (Options.diskReserve)
	log       zerolog.Logger
	full      atomic.Bool
	usedRatio atomic.Uint64 // math.Float64bits of the last used fraction
}

// check samples the disk once and updates the state, logging transitions.
func (g *diskGuard) check() {
	total, free, err := g.fs.DiskUsage(g.dir)
	if err != nil {
		g.log.Warn().Err(err).Msg("disk usage check failed")
		return
	}
	if total == 0 {
		return
	}
	used := float64(total-free) / float64(total)
	g.usedRatio.Store(uint64(used * 1e6))
	full := used >= g.fullRatio || free < g.minFree
	if was := g.full.Swap(full); was != full {
		if full {
			g.log.Error().Float64("usedRatio", used).Float64("limit", g.fullRatio).Uint64("free", free).Msg("disk full: refusing writes")
		} else {
			g.log.Info().Float64("usedRatio", used).Msg("disk has room again: accepting writes")
		}
	}
}

// markFull records that a write failed for lack of space; the next check decides when to
// resume.
func (g *diskGuard) markFull() {
	if !g.full.Swap(true) {
		g.log.Error().Msg("disk full (ENOSPC): refusing writes")
	}
}

// used returns the last sampled used fraction of the disk.
func (g *diskGuard) used() float64 { return float64(g.usedRatio.Load()) / 1e6 }
