package transaction

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferrymq/ferry/internal/testkit"
)

// Scripted tests of the state machine, in the style of etcd-io/raft's testdata: each
// testdata/*.txt file is a list of blocks
//
//	command key=value ...
//	----
//	expected output
//
// separated by blank lines; '#' lines between blocks are comments. The harness (sim) plays
// the driver and the durable store: it keeps the half and op queues and the persisted
// cursors, executes the machine's actions (unless told to hold them or to fail them), and
// asserts the invariants after every command. Run with -rewrite to regenerate the expected
// output after a deliberate change, then review the diff.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt scripts")

func TestScripts(t *testing.T) {
	testkit.RunScripts(t, "testdata/*.txt", *rewrite, func(t *testing.T) func(string) string {
		s := newSim(t)
		return func(line string) string {
			if got := strings.TrimRight(s.run(line), "\n"); got != "" {
				return got
			}
			return "ok"
		}
	})
}

// sim is the scripted driver and store.
type sim struct {
	t         *testing.T
	cfg       machineConfig
	m         *machine
	now       int64
	phy       int64
	halves    []halfInfo // the half queue, by offset
	ops       []opEntry  // the op queue, by offset
	persisted cursors
	out       strings.Builder

	answers   map[string][]string // uniq → scripted answers to its checks
	checks    map[string]int      // uniq → delivered checks
	committed map[string]int
	commitAt  map[int64]bool    // commit-log offsets quoted by stored committed messages
	ended     map[string]string // uniq → outcome written to the store
	fail      map[string]bool   // renew, op, discard, checker
	hold      bool
	held      []action
	holding   map[string]outcome // uniq → END held between beginEnd and its writes
}

func newSim(t *testing.T) *sim {
	s := &sim{t: t, phy: 1000, answers: map[string][]string{}, checks: map[string]int{},
		committed: map[string]int{}, commitAt: map[int64]bool{}, ended: map[string]string{}, fail: map[string]bool{},
		holding: map[string]outcome{}}
	s.cfg = machineConfig{timeout: 6000, recheck: 60000, retry: 6000, maxChecks: 15,
		maxAge: 72 * 3600 * 1000, maxLag: 60000, rate: 100, recent: 1000}
	s.m = newMachine(s.cfg, cursors{})
	s.m.replayed() // nothing stored yet
	return s
}

func (s *sim) printf(format string, args ...any) { fmt.Fprintf(&s.out, format+"\n", args...) }

// run executes one command line and returns its output.
func (s *sim) run(line string) string {
	s.out.Reset()
	fields := strings.Fields(line)
	args := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		args[k] = v
	}
	num := func(k string, def int64) int64 {
		v, ok := args[k]
		if !ok {
			return def
		}
		n, err := strconv.ParseInt(v, 10, 64)
		require.NoError(s.t, err, line)
		return n
	}
	switch fields[0] {
	case "config":
		c := &s.cfg
		c.timeout, c.recheck, c.retry = num("timeout", c.timeout), num("recheck", c.recheck), num("retry", c.retry)
		c.maxChecks, c.maxAge = int(num("maxchecks", int64(c.maxChecks))), num("maxage", c.maxAge)
		c.maxLag, c.rate, c.recent = num("lag", c.maxLag), num("rate", c.rate), int(num("recent", int64(c.recent)))
		s.m.cfg = s.cfg
	case "prepare":
		for _, u := range strings.Split(args["uniq"], ",") {
			h := halfInfo{offset: int64(len(s.halves)), phy: s.nextPhy(), storeMs: s.now, group: "G",
				uniq: u, immunityMs: num("immunity", 0) * 1000}
			h.origin = h.offset
			if g, ok := args["group"]; ok {
				h.group = g
			}
			s.halves = append(s.halves, h)
		}
	case "answers":
		s.answers[args["uniq"]] = strings.Split(args["list"], ",")
	case "set":
		for k, v := range args {
			s.fail[k] = v == "fail" || v == "down"
		}
	case "hold":
		s.hold = args["on"] != "false"
	case "time":
		s.now = num("t", s.now)
	case "scan":
		s.scan()
	case "tick":
		s.now = num("t", s.now)
		s.m.tick(s.now)
	case "round":
		s.now = num("t", s.now)
		s.scan()
		s.m.tick(s.now)
	case "release":
		n := int(num("n", int64(len(s.held))))
		acts := s.held[:n]
		s.held = slices.Clone(s.held[n:])
		hold := s.hold
		s.hold = false
		for _, a := range acts {
			s.printf("release %s", a)
			s.exec(a)
		}
		s.hold = hold
	case "end":
		s.end(args["uniq"], args["kind"], args["copy"], args["hold"] == "true")
	case "end-finish":
		s.endFinish(args["uniq"], args["fail"] == "true")
	case "crash-end":
		u := args["uniq"]
		h := s.quote(u, args["copy"])
		s.writeEnd(u, parseKind(args["kind"]), h)
	case "crash-commit":
		// An END_TRANSACTION commit cut by a kill after its intent ("intent") or after its
		// committed message ("message"), before its op entry.
		u := args["uniq"]
		h := s.quote(u, args["copy"])
		s.appendIntent(h)
		if args["after"] == "message" {
			s.storeCommit(u, h)
		}
	case "restart":
		s.m = newMachine(s.cfg, s.persisted)
		s.held, s.holding = nil, map[string]outcome{}
		s.scan()
		s.printf("replayed from half=%d op=%d", s.persisted.half, s.persisted.op)
		s.m.replayed()
	case "state":
		s.out.WriteString(s.m.dump())
		for _, u := range sortedKeys(s.ended) {
			s.printf("store %s: %s checks=%d", u, s.ended[u], s.checks[u])
		}
	default:
		s.t.Fatalf("unknown command %q", line)
	}
	s.drain()
	s.invariants()
	return s.out.String()
}

func (s *sim) nextPhy() int64 { s.phy += 100; return s.phy - 100 }

// scan feeds the machine everything it has not read, halves first.
func (s *sim) scan() {
	for o := s.m.halfNext; o < int64(len(s.halves)); o++ {
		s.m.halfRead(s.halves[o])
	}
	for o := s.m.opNext; o < int64(len(s.ops)); o++ {
		e := s.ops[o]
		s.m.opRead(o, &e)
	}
}

// drain executes (or holds) the machine's actions until there are none.
func (s *sim) drain() {
	for {
		acts := s.m.ready()
		if len(acts) == 0 {
			return
		}
		for _, a := range acts {
			if s.hold && a.kind != actLog && a.kind != actPersist {
				s.printf("%s (held)", a)
				s.held = append(s.held, a)
				continue
			}
			if a.kind == actCheck {
				_, done := s.ended[a.uniq]
				require.False(s.t, done, "check emitted for %s after it ended (%s)", a.uniq, s.ended[a.uniq])
			}
			s.printf("%s", a)
			s.exec(a)
		}
	}
}

// exec plays the driver's part for one action.
func (s *sim) exec(a action) {
	switch a.kind {
	case actRenew:
		if s.fail["renew"] {
			s.m.renewFailed(a.origin, false)
			return
		}
		src := s.halves[a.copy.offset]
		h := src
		h.offset, h.phy, h.storeMs = int64(len(s.halves)), s.nextPhy(), s.now
		h.origin, h.label, h.nextDue, h.firstStore = a.origin, a.label, a.nextDue, a.firstStore
		s.halves = append(s.halves, h)
		s.m.renewed(a.origin, h)
	case actCheck:
		if s.fail["checker"] {
			s.m.checkDone(a.origin, false)
			return
		}
		s.checks[a.uniq]++
		s.m.checkDone(a.origin, true)
		if ans := s.answers[a.uniq]; len(ans) > 0 {
			s.answers[a.uniq] = ans[1:]
			if ans[0] != "unknown" {
				s.printf("answer %s %s", a.uniq, ans[0])
				s.end(a.uniq, ans[0], strconv.FormatInt(a.copy.offset, 10), false)
			}
		}
	case actDiscard:
		if s.fail["discard"] {
			s.m.discardDone(a.origin, false, false)
			return
		}
		s.ended[a.uniq] = "discard"
		ok := s.appendOp(outcomeDiscard, a.offsets)
		s.m.discardDone(a.origin, true, ok)
	case actWriteOp:
		s.m.opWritten(a.origin, s.appendOp(a.outcome, a.offsets))
	case actVerify:
		if s.fail["verify"] {
			s.m.verifyFailed(a.origin)
			return
		}
		s.m.verified(a.origin, s.commitAt[a.intent.phy])
	case actPersist:
		s.persisted = a.cursors
	}
}

// appendIntent stores the commit intent of an END_TRANSACTION commit quoting h (it is
// never failed: a failed intent fails the END before anything is stored).
func (s *sim) appendIntent(h halfInfo) {
	s.ops = append(s.ops, opEntry{offsets: []int64{h.origin},
		intent: &commitIntent{origin: h.origin, phy: h.phy, topic: "T"}})
}

// storeCommit stores the committed message of uniq quoting h.
func (s *sim) storeCommit(uniq string, h halfInfo) {
	s.committed[uniq]++
	s.commitAt[h.phy] = true
	s.ended[uniq] = outcomeCommit.String()
}

func (s *sim) appendOp(oc outcome, offsets []int64) bool {
	if s.fail["op"] {
		return false
	}
	s.ops = append(s.ops, opEntry{offsets: offsets, outcome: oc})
	return true
}

// quote finds the half message an END_TRANSACTION for uniq quotes: the original (default),
// the newest copy ("latest") or an explicit offset.
func (s *sim) quote(uniq, which string) halfInfo {
	var found []halfInfo
	for _, h := range s.halves {
		if h.uniq == uniq {
			found = append(found, h)
		}
	}
	require.NotEmpty(s.t, found, "no half message for %s", uniq)
	switch which {
	case "", "origin":
		return found[0]
	case "latest":
		return found[len(found)-1]
	}
	o, err := strconv.ParseInt(which, 10, 64)
	require.NoError(s.t, err)
	return s.halves[o]
}

func parseKind(k string) outcome {
	if k == "rollback" {
		return outcomeRollback
	}
	return outcomeCommit
}

// end plays an END_TRANSACTION through the machine.
func (s *sim) end(uniq, kind, which string, hold bool) {
	h := s.quote(uniq, which)
	oc := parseKind(kind)
	v, was := s.m.beginEnd(h, oc)
	switch v {
	case verdictEnded:
		s.printf("end %s %s at %d: already %s", uniq, kind, h.offset, was)
	case verdictForgotten:
		s.printf("end %s %s at %d: already resolved (forgotten)", uniq, kind, h.offset)
	case verdictInProgress:
		s.printf("end %s %s at %d: in progress", uniq, kind, h.offset)
	case verdictProceed:
		s.printf("end %s %s at %d: proceed", uniq, kind, h.offset)
		if hold {
			s.holding[uniq] = oc
			return
		}
		opOK := s.writeEnd(uniq, oc, h)
		s.m.endDone(h.origin, oc, opOK)
	}
}

// endFinish completes a held END_TRANSACTION.
func (s *sim) endFinish(uniq string, fail bool) {
	oc, ok := s.holding[uniq]
	require.True(s.t, ok, "no END held for %s", uniq)
	delete(s.holding, uniq)
	h := s.quote(uniq, "origin")
	if fail {
		s.m.endFailed(h.origin)
		return
	}
	s.m.endDone(h.origin, oc, s.writeEnd(uniq, oc, h))
}

// writeEnd stores what a successful END_TRANSACTION stores and reports whether the op
// entry was written.
func (s *sim) writeEnd(uniq string, oc outcome, h halfInfo) bool {
	if oc == outcomeCommit {
		s.appendIntent(h)
		s.storeCommit(uniq, h)
	}
	s.ended[uniq] = oc.String()
	return s.appendOp(oc, opOffsets(h.origin, h.offset))
}

// invariants are checked after every command.
func (s *sim) invariants() {
	for u, n := range s.committed {
		require.LessOrEqual(s.t, n, 1, "%s committed %d times", u, n)
	}
	for u, n := range s.checks {
		require.LessOrEqual(s.t, n, s.cfg.maxChecks, "%s checked %d times", u, n)
	}
	require.LessOrEqual(s.t, s.m.halfCursor, s.m.halfNext)
	require.LessOrEqual(s.t, s.m.opCursor, s.m.opNext)
	require.Len(s.t, s.m.slots, int(s.m.halfNext-s.m.halfCursor))
	require.Len(s.t, s.m.ops, int(s.m.opNext-s.m.opCursor))
	for _, t := range s.m.due {
		require.Equal(s.t, statePending, t.state)
		require.Equal(s.t, busyNone, t.busy)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
