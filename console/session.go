package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"sync"
	"time"
)

// session is one logged-in browser.
type session struct {
	user    string
	role    Role
	csrf    string // the token every write must carry
	expires time.Time
	flash   string // a message for the next page (guarded by sessions.mu)
}

// sessions holds the live sessions, at most max, keyed by the SHA-256 of their id (the
// cookie's value), so that the table holds nothing a cookie could be made from. It is
// safe for concurrent use.
type sessions struct {
	mu   sync.Mutex
	byID map[[sha256.Size]byte]*session
	max  int
	ttl  time.Duration
	now  func() time.Time
}

func newSessions(maxSessions int, ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{byID: map[[sha256.Size]byte]*session{}, max: maxSessions, ttl: ttl, now: now}
}

// randomToken returns 32 random bytes, base64url-encoded.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics if the system cannot give randomness)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create starts a session for user and returns its id. When the table is full the
// expired sessions go, then the one closest to expiry.
func (s *sessions) create(user string, role Role) (string, *session) {
	id := randomToken()
	ses := &session{user: user, role: role, csrf: randomToken(), expires: s.now().Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) >= s.max {
		s.evict()
	}
	s.byID[sha256.Sum256([]byte(id))] = ses
	return id, ses
}

// evict removes the expired sessions, and the oldest one if none was (s.mu held).
func (s *sessions) evict() {
	now := s.now()
	var oldest [sha256.Size]byte
	var oldestAt time.Time
	removed := false
	for k, ses := range s.byID {
		if !now.Before(ses.expires) {
			delete(s.byID, k)
			removed = true
			continue
		}
		if oldestAt.IsZero() || ses.expires.Before(oldestAt) {
			oldest, oldestAt = k, ses.expires
		}
	}
	if !removed && !oldestAt.IsZero() {
		delete(s.byID, oldest)
	}
}

// get returns the live session with id; an expired one is removed.
func (s *sessions) get(id string) (*session, bool) {
	if id == "" {
		return nil, false
	}
	k := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.byID[k]
	if !ok {
		return nil, false
	}
	if !s.now().Before(ses.expires) {
		delete(s.byID, k)
		return nil, false
	}
	return ses, true
}

// remove ends the session with id.
func (s *sessions) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, sha256.Sum256([]byte(id)))
}

// len counts the sessions held, expired ones included.
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// tokenEqual compares a token from a request with the expected one in constant time.
func tokenEqual(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// limiter counts failed logins per client address in fixed windows: an address with
// max failures in the current window is refused until the window ends. It tracks at
// most size addresses (when full, expired windows go first, then the oldest window).
// It is safe for concurrent use.
type limiter struct {
	mu     sync.Mutex
	byAddr map[string]*window
	max    int
	size   int
	period time.Duration
	now    func() time.Time
}

// window is one address's failures since start.
type window struct {
	start    time.Time
	failures int
}

func newLimiter(maxFailures, size int, period time.Duration, now func() time.Time) *limiter {
	return &limiter{byAddr: map[string]*window{}, max: maxFailures, size: size, period: period, now: now}
}

// blocked reports whether addr may not try now, and for how long.
func (l *limiter) blocked(addr string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.byAddr[addr]
	if !ok {
		return 0, false
	}
	left := w.start.Add(l.period).Sub(l.now())
	if left <= 0 {
		delete(l.byAddr, addr)
		return 0, false
	}
	return left, w.failures >= l.max
}

// fail counts a failed login from addr.
func (l *limiter) fail(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	w, ok := l.byAddr[addr]
	if ok && !now.Before(w.start.Add(l.period)) {
		ok = false
	}
	if !ok {
		if _, tracked := l.byAddr[addr]; !tracked && len(l.byAddr) >= l.size {
			l.evict(now)
		}
		w = &window{start: now}
		l.byAddr[addr] = w
	}
	w.failures++
}

// evict removes the ended windows, and the oldest one if none had ended (l.mu held).
func (l *limiter) evict(now time.Time) {
	var oldest string
	var oldestAt time.Time
	removed := false
	for a, w := range l.byAddr {
		if !now.Before(w.start.Add(l.period)) {
			delete(l.byAddr, a)
			removed = true
			continue
		}
		if oldestAt.IsZero() || w.start.Before(oldestAt) {
			oldest, oldestAt = a, w.start
		}
	}
	if !removed && oldest != "" {
		delete(l.byAddr, oldest)
	}
}

// succeed forgets addr's failures.
func (l *limiter) succeed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byAddr, addr)
}

// tracked counts the addresses held.
func (l *limiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.byAddr)
}
