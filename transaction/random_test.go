package transaction

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/message"
)

// Producer behaviours of the randomized driver test.
const (
	behCommit        = iota // END commit right away
	behRollback             // END rollback right away
	behUnknownCommit        // END unknown, then answers the first check with commit
	behCheckRollback        // no END, answers the first check with rollback
	behLateCommit           // answers unknown a few times, then commit
	behSilent               // never answers: discarded after MaxChecks
	behDuplicate            // END commit, then a duplicate and a contradicting END
	behDoubleAnswer         // answers the check with commit, then its own late END commit
	numBehaviours
)

// TestRandomOutcomes prepares many half messages with random producer behaviour, drives
// the service with an injected clock (optionally restarting service and store midway)
// and checks every outcome against the store.
func TestRandomOutcomes(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) { runRandomOutcomes(t, 1000, restart) })
	}
}

func runRandomOutcomes(t *testing.T, n int, restart bool) {
	const maxChecks = 5
	e := newEnv(t, func(o *Options) { o.MaxChecks = maxChecks })
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	type txnCase struct {
		uniq, topic string
		qid         int32
		beh         int
		prep        PrepareResult
	}
	cases := make([]txnCase, n)
	var doubles []int
	for i := range cases {
		c := txnCase{uniq: fmt.Sprintf("UNIQ%06d", i), topic: fmt.Sprintf("T%d", i%3), qid: int32(i % 4),
			beh: rng.IntN(numBehaviours)}
		c.prep = e.prepare(c.topic, c.qid, c.uniq)
		var answers []int32
		switch c.beh {
		case behCommit:
			require.Equal(t, EndCommitted, e.end(c.prep, c.uniq, message.TransactionCommitType))
		case behRollback:
			require.Equal(t, EndRolledBack, e.end(c.prep, c.uniq, message.TransactionRollbackType))
		case behUnknownCommit:
			require.Equal(t, EndIgnored, e.end(c.prep, c.uniq, message.TransactionNotType))
			answers = []int32{message.TransactionCommitType}
		case behCheckRollback:
			answers = []int32{message.TransactionRollbackType}
		case behLateCommit:
			answers = make([]int32, 1+rng.IntN(maxChecks-1))
			answers[len(answers)-1] = message.TransactionCommitType
		case behDuplicate:
			require.Equal(t, EndCommitted, e.end(c.prep, c.uniq, message.TransactionCommitType))
			require.Equal(t, EndAlreadyCommitted, e.end(c.prep, c.uniq, message.TransactionCommitType))
			require.Equal(t, EndAlreadyCommitted, e.end(c.prep, c.uniq, message.TransactionRollbackType))
		case behDoubleAnswer:
			answers = []int32{message.TransactionCommitType}
			doubles = append(doubles, i)
		}
		e.checker.mu.Lock()
		e.checker.mu.answers[c.uniq] = answers
		e.checker.mu.Unlock()
		cases[i] = c
		if i%50 == 49 {
			// Producers keep sending while time passes and the scan runs.
			e.clock.advance(time.Second)
			e.round()
		}
	}
	lateDone := false
	for step := 0; e.svc.Stats().Pending > 0; step++ {
		require.Less(t, step, 500, "transactions still pending: %+v", e.svc.Stats())
		e.clock.advance(time.Second)
		e.round()
		if restart && step == 12 {
			e.restart()
		}
		if !lateDone && step == 20 {
			// The producers that answered their check now send their own late END with the
			// send response's offsets: already committed.
			for _, i := range doubles {
				c := cases[i]
				require.Equal(t, EndAlreadyCommitted, e.end(c.prep, c.uniq, message.TransactionCommitType), c.uniq)
			}
			lateDone = true
		}
	}
	e.round()

	// Every committed message is in its real topic exactly once, nothing else is.
	seen := map[string]int{}
	for topic := range 3 {
		for qid := range 4 {
			for _, rec := range e.queue(fmt.Sprintf("T%d", topic), int32(qid)) {
				u := prop(&rec, message.PropertyUniqKey)
				seen[u]++
				assert.Equal(t, message.TransactionCommitType, message.TransactionType(rec.SysFlag))
				assert.Equal(t, "body-"+u, string(rec.Body))
			}
		}
	}
	discarded := map[string]int{}
	for _, rec := range e.queue(discardTopic, 0) {
		discarded[prop(&rec, message.PropertyUniqKey)]++
	}
	e.checker.mu.Lock()
	defer e.checker.mu.Unlock()
	assert.Empty(t, e.checker.mu.late, "checks after the transaction ended")
	assert.Empty(t, e.checker.mu.endErrors)
	for _, c := range cases {
		committed := c.beh == behCommit || c.beh == behUnknownCommit || c.beh == behLateCommit ||
			c.beh == behDuplicate || c.beh == behDoubleAnswer
		if committed {
			assert.Equal(t, 1, seen[c.uniq], "%s (behaviour %d) committed once", c.uniq, c.beh)
		} else {
			assert.Zero(t, seen[c.uniq], "%s (behaviour %d) never committed", c.uniq, c.beh)
		}
		checks := e.checker.mu.checks[c.uniq]
		assert.LessOrEqual(t, checks, maxChecks, c.uniq)
		switch c.beh {
		case behCommit, behRollback, behDuplicate:
			assert.Zero(t, checks, "%s ended before its timeout", c.uniq)
		case behSilent:
			assert.Equal(t, 1, discarded[c.uniq], "%s discarded once", c.uniq)
			// A clean restart loses no check, so even then exactly MaxChecks are delivered.
			assert.Equal(t, maxChecks, checks, "%s checked exactly MaxChecks times", c.uniq)
		case behLateCommit:
			assert.Equal(t, len(e.checker.mu.answers[c.uniq]), 0, "%s got all its checks", c.uniq)
		}
		if c.beh != behSilent {
			assert.Zero(t, discarded[c.uniq], c.uniq)
		}
	}
	st := e.svc.Stats()
	assert.Equal(t, 0, st.Pending)
	assert.Equal(t, e.st.MaxOffset(halfTopic, 0), st.HalfCursor, "half cursor caught up")
	assert.Equal(t, e.st.MaxOffset(opTopic, 0), st.OpCursor, "op cursor caught up")
}
