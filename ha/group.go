package ha

import "sync"

// group tracks goroutines: go starts one, wait waits for all of them.
type group struct{ wg sync.WaitGroup }

func (g *group) goTracked(fn func()) { g.wg.Go(fn) }

func (g *group) wait() { g.wg.Wait() }
