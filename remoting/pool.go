package remoting

import "sync"

// task is one request waiting for a worker (or run inline by the connection's reader).
type task struct {
	conn   *serverConn
	req    *Command
	h      Handler
	inline bool // run by the connection's reader: its answer waits for the end of the burst
}

// workerPool is a fixed set of goroutines serving one request class from a bounded queue.
type workerPool struct {
	name    string
	workers int
	run     func(task)
	tasks   chan task
	wg      sync.WaitGroup
	mu      struct {
		sync.RWMutex
		stopped bool
	}
}

func newWorkerPool(o PoolOptions, run func(task)) *workerPool {
	return &workerPool{name: o.Name, workers: o.Workers, run: run, tasks: make(chan task, o.QueueSize)}
}

// start launches the workers.
func (p *workerPool) start() {
	p.wg.Add(p.workers)
	for range p.workers {
		go func() {
			defer p.wg.Done()
			for t := range p.tasks {
				p.run(t)
			}
		}()
	}
}

// submit queues t without blocking; it reports false when the queue is full or stopped.
func (p *workerPool) submit(t task) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.mu.stopped {
		return false
	}
	select {
	case p.tasks <- t:
		return true
	default:
		return false
	}
}

// stopAndWait lets queued tasks finish and stops the workers.
func (p *workerPool) stopAndWait() {
	p.mu.Lock()
	if !p.mu.stopped {
		p.mu.stopped = true
		close(p.tasks)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// inflightCounter counts requests being served and lets Shutdown wait for zero. Unlike
// sync.WaitGroup it allows new requests to be counted while somebody waits.
type inflightCounter struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n reaches zero while a waiter exists
}

func (c *inflightCounter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *inflightCounter) done() {
	c.mu.Lock()
	c.n--
	if c.n == 0 && c.zero != nil {
		close(c.zero)
		c.zero = nil
	}
	c.mu.Unlock()
}

// drained returns a channel that is closed once no request is in flight.
func (c *inflightCounter) drained() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if c.n == 0 {
		close(ch)
		return ch
	}
	if c.zero == nil {
		c.zero = make(chan struct{})
	}
	return c.zero
}
