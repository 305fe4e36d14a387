package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/switchyard/switchyard/configs/policy"
)

// Sessions are kept by the ext_proc process that signed them in, in
// memory: the browser holds a random session ID in an HttpOnly cookie and
// never the admin key. A session ends at logout, after idleTimeout without
// a page the operator asked for (the pages' own background refreshes do
// not count), after maxAge whatever happens, and when the policy's admin
// key changes, so that rotating the admin key signs every console out.
const (
	idleTimeout = 30 * time.Minute
	maxAge      = 12 * time.Hour
	// maxSessions bounds the table; past it the oldest session goes.
	maxSessions = 1000
	// cookieName is the session cookie's; with TLS it takes the
	// __Secure- prefix, which makes the browser refuse it without Secure.
	cookieName = "switchyard_console"
	// cookiePath keeps the cookie to the console's pages: no request to
	// the model APIs carries it towards a provider.
	cookiePath = "/console"
)

// session is one signed-in browser.
type session struct {
	// ref names the session in the audit trail: a prefix of the hash of
	// its ID, which tells one session's actions from another's without
	// letting the trail's reader take it over.
	ref  string
	csrf string
	// admin is the hash of the admin key the session signed in with.
	admin   [32]byte
	created time.Time
	seen    time.Time
}

// sessions is the process's session table. It outlives policy reloads,
// which rebuild the filter, so a reload signs no one out.
type sessions struct {
	mu  sync.Mutex
	now func() time.Time
	// byHash holds each session under the SHA-256 of its ID: the table
	// never holds a usable cookie.
	byHash map[[32]byte]*session
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, byHash: map[[32]byte]*session{}}
}

// process is the table of this process's console.
var process = newSessions(time.Now)

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// create opens a session for the holder of admin key hash admin and
// returns its ID, the cookie's value.
func (s *sessions) create(admin [32]byte) (string, *session) {
	id := randomToken()
	h := sha256.Sum256([]byte(id))
	now := s.now()
	ss := &session{ref: hex.EncodeToString(h[:4]), csrf: randomToken(), admin: admin, created: now, seen: now}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byHash) >= maxSessions {
		s.sweepLocked(now)
	}
	s.byHash[h] = ss
	return id, ss
}

// sweepLocked drops the sessions that expired and, if that frees no
// room, the oldest.
func (s *sessions) sweepLocked(now time.Time) {
	var oldest [32]byte
	var oldestAt time.Time
	for h, ss := range s.byHash {
		if ss.expired(now) {
			delete(s.byHash, h)
			continue
		}
		if oldestAt.IsZero() || ss.created.Before(oldestAt) {
			oldest, oldestAt = h, ss.created
		}
	}
	if len(s.byHash) >= maxSessions {
		delete(s.byHash, oldest)
	}
}

func (ss *session) expired(now time.Time) bool {
	return now.Sub(ss.seen) >= idleTimeout || now.Sub(ss.created) >= maxAge
}

// lookup returns the live session of id signed in with the admin key g
// holds now; active marks a page the operator asked for, which keeps an
// idle session alive.
func (s *sessions) lookup(id string, g *policy.Gateway, active bool) *session {
	if id == "" {
		return nil
	}
	h := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byHash[h]
	if ss == nil {
		return nil
	}
	now := s.now()
	if ss.expired(now) || !g.HasAdminKey || subtle.ConstantTimeCompare(ss.admin[:], g.AdminKeyHash[:]) != 1 {
		delete(s.byHash, h)
		return nil
	}
	if active {
		ss.seen = now
	}
	return ss
}

// end closes the session of id.
func (s *sessions) end(id string) {
	h := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byHash, h)
}

// validCSRF reports whether token is the session's CSRF token.
func (ss *session) validCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(ss.csrf)) == 1
}

// cookieNameFor is the cookie's name with and without TLS.
func cookieNameFor(secure bool) string {
	if secure {
		return "__Secure-" + cookieName
	}
	return cookieName
}

// sessionCookie is the Set-Cookie value that hands the browser id: never
// readable by script, never sent by another site, only over TLS when the
// console is served over TLS, and gone when the browser closes (the
// session's own expiry is the server's).
func sessionCookie(id string, secure bool) string {
	c := &http.Cookie{Name: cookieNameFor(secure), Value: id, Path: cookiePath, HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteStrictMode}
	return c.String()
}

// clearedCookie is the Set-Cookie value that deletes the session cookie.
func clearedCookie(secure bool) string {
	c := &http.Cookie{Name: cookieNameFor(secure), Value: "", Path: cookiePath, HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteStrictMode, MaxAge: -1}
	return c.String()
}

// cookieValue reads the session cookie from a request's cookie headers.
func cookieValue(header string, secure bool) string {
	cs, err := http.ParseCookie(header)
	if err != nil {
		// One bad cookie of another app on the host must not sign the
		// operator out: read the pairs one by one.
		for _, part := range strings.Split(header, ";") {
			if name, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && name == cookieNameFor(secure) {
				return v
			}
		}
		return ""
	}
	for _, c := range cs {
		if c.Name == cookieNameFor(secure) {
			return c.Value
		}
	}
	return ""
}
