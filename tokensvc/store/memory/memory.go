package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/internal/record"
)

type upstreamKey struct{ subject, routeID string }

// Store is an in-memory [store.Store]. Every operation holds one mutex, so
// the consuming operations are atomic. The zero value is not usable; call New.
type Store struct {
	mu       sync.Mutex
	clients  map[string]store.Client
	codes    map[string]store.AuthCode
	grants   map[string]store.Grant
	refresh  map[string]store.RefreshToken
	access   map[string]store.AccessToken
	sessions map[string]store.Session
	cookies  map[string]store.BrowserCookie
	upstream map[upstreamKey]store.UpstreamToken
	leases   map[upstreamKey]upstreamLease
	// upClients are the registrations at upstream authorization servers.
	upClients map[upstreamClientKey]store.UpstreamClient
	oneTimes  map[string]store.OneTime
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	return &Store{
		clients:   map[string]store.Client{},
		codes:     map[string]store.AuthCode{},
		grants:    map[string]store.Grant{},
		refresh:   map[string]store.RefreshToken{},
		access:    map[string]store.AccessToken{},
		sessions:  map[string]store.Session{},
		cookies:   map[string]store.BrowserCookie{},
		upstream:  map[upstreamKey]store.UpstreamToken{},
		leases:    map[upstreamKey]upstreamLease{},
		upClients: map[upstreamClientKey]store.UpstreamClient{},
		oneTimes:  map[string]store.OneTime{},
	}
}

func notFound(what string) error      { return fmt.Errorf("%s: %w", what, store.ErrNotFound) }
func alreadyExists(what string) error { return fmt.Errorf("%s: %w", what, store.ErrAlreadyExists) }

// CreateClient implements [store.Clients].
func (s *Store) CreateClient(ctx context.Context, c store.Client) error {
	c, err := record.Client(c)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[c.ID]; ok {
		return alreadyExists("create client")
	}
	s.clients[c.ID] = c
	return nil
}

// GetClient implements [store.Clients].
func (s *Store) GetClient(ctx context.Context, id string, now time.Time) (store.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok || !record.Live(c.ExpiresAt, now, true) {
		return store.Client{}, notFound("get client")
	}
	return record.CopyClient(c), nil
}

// TouchClient implements [store.Clients].
func (s *Store) TouchClient(ctx context.Context, id string, usedAt, expiresAt time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return notFound("touch client")
	}
	c.LastUsedAt = store.Time(usedAt)
	if e := store.Time(expiresAt); !c.ExpiresAt.IsZero() && e.After(c.ExpiresAt) {
		c.ExpiresAt = e
	}
	s.clients[id] = c
	return nil
}

// DeleteClient implements [store.Clients].
func (s *Store) DeleteClient(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[id]; !ok {
		return notFound("delete client")
	}
	delete(s.clients, id)
	return nil
}

// CreateAuthCode implements [store.AuthCodes].
func (s *Store) CreateAuthCode(ctx context.Context, c store.AuthCode) error {
	c, err := record.AuthCode(c)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.codes[string(c.Hash)]; ok {
		return alreadyExists("create auth code")
	}
	s.codes[string(c.Hash)] = c
	return nil
}

// GetAuthCode implements [store.AuthCodes].
func (s *Store) GetAuthCode(ctx context.Context, hash []byte, now time.Time) (store.AuthCode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.codes[string(hash)]
	if !ok || !record.Live(c.ExpiresAt, now, false) {
		return store.AuthCode{}, notFound("get auth code")
	}
	return record.CopyAuthCode(c), nil
}

// TakeAuthCode implements [store.AuthCodes].
func (s *Store) TakeAuthCode(ctx context.Context, hash []byte, now time.Time) (store.AuthCode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.codes[string(hash)]
	if !ok || !record.Live(c.ExpiresAt, now, false) {
		return store.AuthCode{}, notFound("take auth code")
	}
	delete(s.codes, string(hash))
	return c, nil
}

// CreateGrant implements [store.Grants].
func (s *Store) CreateGrant(ctx context.Context, g store.Grant, first store.RefreshToken) error {
	g, err := record.Grant(g)
	if err != nil {
		return err
	}
	first, err = record.RefreshToken(first, g.ID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g.SessionID != "" {
		if sess, ok := s.sessions[g.SessionID]; !ok || !sess.RevokedAt.IsZero() {
			return notFound("create grant: session")
		}
	}
	if _, ok := s.grants[g.ID]; ok {
		return alreadyExists("create grant")
	}
	if _, ok := s.refresh[string(first.Hash)]; ok {
		return alreadyExists("create grant: refresh token")
	}
	s.grants[g.ID] = g
	s.refresh[string(first.Hash)] = first
	return nil
}

// GetGrant implements [store.Grants].
func (s *Store) GetGrant(ctx context.Context, id string) (store.Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.grants[id]
	if !ok {
		return store.Grant{}, notFound("get grant")
	}
	return g, nil
}

// liveGrant reports whether the grant of that id exists, is unrevoked and
// unexpired at now. The caller holds s.mu.
func (s *Store) liveGrant(id string, now time.Time) (store.Grant, bool) {
	g, ok := s.grants[id]
	if !ok || !g.RevokedAt.IsZero() || !record.Live(g.ExpiresAt, now, false) {
		return store.Grant{}, false
	}
	return g, true
}

// GetRefreshToken implements [store.Grants].
func (s *Store) GetRefreshToken(ctx context.Context, hash []byte, now time.Time) (store.RefreshToken, store.Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.refresh[string(hash)]
	if !ok || !record.Live(t.ExpiresAt, now, false) {
		return store.RefreshToken{}, store.Grant{}, notFound("get refresh token")
	}
	g, ok := s.liveGrant(t.GrantID, now)
	if !ok {
		return store.RefreshToken{}, store.Grant{}, notFound("get refresh token: grant")
	}
	return record.CopyRefreshToken(t), g, nil
}

// RotateRefreshToken implements [store.Grants].
func (s *Store) RotateRefreshToken(ctx context.Context, oldHash []byte, next store.RefreshToken, now time.Time) (store.Grant, error) {
	return s.RotateRefreshTokenWithin(ctx, oldHash, next, now, 0)
}

// RotateRefreshTokenWithin implements [store.Grants].
func (s *Store) RotateRefreshTokenWithin(ctx context.Context, oldHash []byte, next store.RefreshToken, now time.Time, reuse time.Duration) (store.Grant, error) {
	next, err := record.RefreshToken(next, "")
	if err != nil {
		return store.Grant{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.refresh[string(oldHash)]
	if !ok || !record.Live(old.ExpiresAt, now, false) {
		return store.Grant{}, notFound("rotate refresh token")
	}
	g, ok := s.liveGrant(old.GrantID, now)
	if !ok {
		return store.Grant{}, notFound("rotate refresh token: grant")
	}
	if !old.UsedAt.IsZero() {
		if succ, ok := s.refresh[string(next.Hash)]; ok && reuse > 0 && store.Time(now).Sub(old.UsedAt) <= reuse &&
			succ.GrantID == g.ID && succ.UsedAt.IsZero() && record.Live(succ.ExpiresAt, now, false) {
			return g, nil
		}
		s.revokeGrant(g.ID, now)
		return store.Grant{}, fmt.Errorf("rotate refresh token: %w", store.ErrRefreshReused)
	}
	next.GrantID = g.ID
	if _, ok := s.refresh[string(next.Hash)]; ok {
		return store.Grant{}, alreadyExists("rotate refresh token: new token")
	}
	old.UsedAt = store.Time(now)
	s.refresh[string(oldHash)] = old
	s.refresh[string(next.Hash)] = next
	return g, nil
}

// revokeGrant revokes the grant and deletes its access tokens, reporting
// whether it was unrevoked. The caller holds s.mu.
func (s *Store) revokeGrant(id string, now time.Time) bool {
	g, ok := s.grants[id]
	if !ok || !g.RevokedAt.IsZero() {
		return false
	}
	g.RevokedAt = store.Time(now)
	s.grants[id] = g
	for h, t := range s.access {
		if t.GrantID == id {
			delete(s.access, h)
		}
	}
	return true
}

// RevokeGrant implements [store.Grants].
func (s *Store) RevokeGrant(ctx context.Context, id string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.grants[id]; !ok {
		return notFound("revoke grant")
	}
	s.revokeGrant(id, now)
	return nil
}

// ListGrantsBySession implements [store.Grants].
func (s *Store) ListGrantsBySession(ctx context.Context, sessionID string) ([]store.Grant, error) {
	if sessionID == "" {
		return nil, nil // grants outside a session are not a session's
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Grant
	for _, g := range s.grants {
		if g.SessionID == sessionID {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b store.Grant) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return compareStrings(a.ID, b.ID)
	})
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// RevokeGrantsBySession implements [store.Grants].
func (s *Store) RevokeGrantsBySession(ctx context.Context, sessionID string, now time.Time) (int64, error) {
	if sessionID == "" {
		return 0, nil // grants outside a session are not a session's
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.revokeGrantsBySession(sessionID, now), nil
}

func (s *Store) revokeGrantsBySession(sessionID string, now time.Time) int64 {
	var n int64
	for id, g := range s.grants {
		if g.SessionID == sessionID && s.revokeGrant(id, now) {
			n++
		}
	}
	return n
}

// CreateAccessToken implements [store.AccessTokens].
func (s *Store) CreateAccessToken(ctx context.Context, t store.AccessToken) error {
	t, err := record.AccessToken(t)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.access[string(t.Hash)]; ok {
		return alreadyExists("create access token")
	}
	s.access[string(t.Hash)] = t
	return nil
}

// GetAccessToken implements [store.AccessTokens].
func (s *Store) GetAccessToken(ctx context.Context, hash []byte, now time.Time) (store.AccessToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.access[string(hash)]
	if !ok || !record.Live(t.ExpiresAt, now, false) {
		return store.AccessToken{}, notFound("get access token")
	}
	if t.GrantID != "" {
		if _, ok := s.liveGrant(t.GrantID, now); !ok {
			return store.AccessToken{}, notFound("get access token: grant")
		}
	}
	if t.SessionID != "" {
		if sess, ok := s.sessions[t.SessionID]; !ok || !sess.RevokedAt.IsZero() {
			return store.AccessToken{}, notFound("get access token: session")
		}
	}
	return record.CopyAccessToken(t), nil
}

// DeleteAccessToken implements [store.AccessTokens].
func (s *Store) DeleteAccessToken(ctx context.Context, hash []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.access[string(hash)]; !ok {
		return notFound("delete access token")
	}
	delete(s.access, string(hash))
	return nil
}

// CreateSession implements [store.Sessions].
func (s *Store) CreateSession(ctx context.Context, sess store.Session) error {
	sess, err := record.Session(sess)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[sess.ID]; ok {
		return alreadyExists("create session")
	}
	sess.Version = 1
	s.sessions[sess.ID] = sess
	return nil
}

// GetSession implements [store.Sessions].
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok || !sess.RevokedAt.IsZero() {
		return store.Session{}, notFound("get session")
	}
	return record.CopySession(sess), nil
}

// UpdateSession implements [store.Sessions].
func (s *Store) UpdateSession(ctx context.Context, sess store.Session) (int64, error) {
	in, err := record.Session(sess)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.sessions[in.ID]
	if !ok || !cur.RevokedAt.IsZero() {
		return 0, notFound("update session")
	}
	if cur.Version != in.Version {
		return 0, fmt.Errorf("update session: %w", store.ErrConflict)
	}
	cur.Email, cur.Name, cur.Groups, cur.Claims = in.Email, in.Name, in.Groups, in.Claims
	cur.IDPTokens, cur.IDPTokenExpiry, cur.ExpiresAt = in.IDPTokens, in.IDPTokenExpiry, in.ExpiresAt
	cur.Version++
	s.sessions[in.ID] = cur
	return cur.Version, nil
}

// RevokeSession implements [store.Sessions].
func (s *Store) RevokeSession(ctx context.Context, id string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.sessions[id]
	if !ok {
		return notFound("revoke session")
	}
	if sess.RevokedAt.IsZero() {
		sess.RevokedAt = store.Time(now)
		s.sessions[id] = sess
	}
	s.revokeGrantsBySession(id, now)
	for h, c := range s.cookies {
		if c.SessionID == id {
			delete(s.cookies, h)
		}
	}
	return nil
}

// CreateBrowserCookie implements [store.BrowserCookies].
func (s *Store) CreateBrowserCookie(ctx context.Context, c store.BrowserCookie) error {
	c, err := record.BrowserCookie(c)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cookies[string(c.Hash)]; ok {
		return alreadyExists("create browser cookie")
	}
	s.cookies[string(c.Hash)] = c
	return nil
}

// GetBrowserCookie implements [store.BrowserCookies].
func (s *Store) GetBrowserCookie(ctx context.Context, hash []byte, host string, now time.Time) (store.BrowserCookie, store.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.cookies[string(hash)]
	if !ok || c.Host != host || !record.Live(c.ExpiresAt, now, false) {
		return store.BrowserCookie{}, store.Session{}, notFound("get browser cookie")
	}
	sess, ok := s.sessions[c.SessionID]
	if !ok || !sess.RevokedAt.IsZero() || !record.Live(sess.ExpiresAt, now, false) {
		return store.BrowserCookie{}, store.Session{}, notFound("get browser cookie: session")
	}
	return record.CopyBrowserCookie(c), record.CopySession(sess), nil
}

// DeleteBrowserCookie implements [store.BrowserCookies].
func (s *Store) DeleteBrowserCookie(ctx context.Context, hash []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.cookies[string(hash)]; !ok {
		return notFound("delete browser cookie")
	}
	delete(s.cookies, string(hash))
	return nil
}

// PutUpstreamToken implements [store.UpstreamTokens].
func (s *Store) PutUpstreamToken(ctx context.Context, t store.UpstreamToken) error {
	t, err := record.UpstreamToken(t)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.upstream[upstreamKey{t.Subject, t.RouteID}] = t
	delete(s.leases, upstreamKey{t.Subject, t.RouteID})
	return nil
}

// GetUpstreamToken implements [store.UpstreamTokens].
func (s *Store) GetUpstreamToken(ctx context.Context, subject, routeID string, now time.Time) (store.UpstreamToken, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.upstream[upstreamKey{subject, routeID}]
	if !ok || !record.Live(t.ExpiresAt, now, true) {
		return store.UpstreamToken{}, notFound("get upstream token")
	}
	return record.CopyUpstreamToken(t), nil
}

// DeleteUpstreamToken implements [store.UpstreamTokens].
func (s *Store) DeleteUpstreamToken(ctx context.Context, subject, routeID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := upstreamKey{subject, routeID}
	if _, ok := s.upstream[k]; !ok {
		return notFound("delete upstream token")
	}
	delete(s.upstream, k)
	delete(s.leases, k)
	return nil
}

// PutOneTime implements [store.OneTimes].
func (s *Store) PutOneTime(ctx context.Context, v store.OneTime) error {
	v, err := record.OneTime(v)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.oneTimes[string(v.Hash)]; ok {
		return alreadyExists("put one-time value")
	}
	s.oneTimes[string(v.Hash)] = v
	return nil
}

// GetOneTime implements [store.OneTimes].
func (s *Store) GetOneTime(ctx context.Context, hash []byte, kind string, now time.Time) (store.OneTime, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.oneTimes[string(hash)]
	if !ok || v.Kind != kind || !record.Live(v.ExpiresAt, now, false) {
		return store.OneTime{}, notFound("get one-time value")
	}
	return record.CopyOneTime(v), nil
}

// TakeOneTime implements [store.OneTimes].
func (s *Store) TakeOneTime(ctx context.Context, hash []byte, kind string, now time.Time) (store.OneTime, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.oneTimes[string(hash)]
	if !ok || v.Kind != kind || !record.Live(v.ExpiresAt, now, false) {
		return store.OneTime{}, notFound("take one-time value")
	}
	delete(s.oneTimes, string(hash))
	return v, nil
}

// DeleteExpired implements [store.Store].
func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	sweep := func(live bool, del func()) {
		if !live {
			del()
			n++
		}
	}
	for k, v := range s.codes {
		sweep(record.Live(v.ExpiresAt, now, false), func() { delete(s.codes, k) })
	}
	for k, v := range s.oneTimes {
		sweep(record.Live(v.ExpiresAt, now, false), func() { delete(s.oneTimes, k) })
	}
	for k, v := range s.clients {
		sweep(record.Live(v.ExpiresAt, now, true), func() { delete(s.clients, k) })
	}
	for k, v := range s.upstream {
		sweep(record.Live(v.ExpiresAt, now, true), func() { delete(s.upstream, k) })
	}
	for k, v := range s.upClients {
		sweep(record.Live(v.ExpiresAt, now, true), func() { delete(s.upClients, k) })
	}
	for k, v := range s.grants {
		sweep(record.Live(v.ExpiresAt, now, false), func() { delete(s.grants, k) })
	}
	for k, v := range s.refresh {
		_, ok := s.grants[v.GrantID]
		sweep(ok && record.Live(v.ExpiresAt, now, false), func() { delete(s.refresh, k) })
	}
	for k, v := range s.access {
		_, ok := s.grants[v.GrantID]
		sweep((ok || v.GrantID == "") && record.Live(v.ExpiresAt, now, false), func() { delete(s.access, k) })
	}
	held := map[string]bool{}
	for id := range s.grants {
		if g, ok := s.liveGrant(id, now); ok {
			held[g.SessionID] = true
		}
	}
	for k, v := range s.sessions {
		sweep(held[k] || record.Live(v.ExpiresAt, now, false), func() { delete(s.sessions, k) })
	}
	for k, v := range s.cookies {
		_, ok := s.sessions[v.SessionID]
		sweep(ok && record.Live(v.ExpiresAt, now, false), func() { delete(s.cookies, k) })
	}
	return n, nil
}

// Close implements [store.Store]; it does nothing.
func (s *Store) Close() error { return nil }

// CountLiveSessions returns how many sessions are neither revoked nor expired at now (the
// live-sessions gauge).
func (s *Store) CountLiveSessions(_ context.Context, now time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, sess := range s.sessions {
		if sess.RevokedAt.IsZero() && (sess.ExpiresAt.IsZero() || now.Before(sess.ExpiresAt)) {
			n++
		}
	}
	return n, nil
}
