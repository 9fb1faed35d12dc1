// The Internal Tokens: stored sealed per (user, route), handed to the check API, refreshed
// before they expire by one holder at a time across every replica (store.UpstreamLeases).

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/check"
	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Refresh timing.
const (
	// RefreshMargin: a TI is refreshed once it expires within this margin.
	RefreshMargin = 60 * time.Second
	// leaseTTL is how long a refresh lease lasts: longer than two token endpoint calls
	// (auth_style unset tries two), so a live lease means a refresh may still be running.
	leaseTTL = 3 * CallTimeout
	// refreshWait is how long a request waits for a refresh while the old TI is still valid;
	// after it, the request goes on with the old TI and the refresh completes on its own.
	refreshWait = time.Second
	// leasePoll is how often a replica that found the lease taken looks again.
	leasePoll = 100 * time.Millisecond
)

// ErrUpstreamRequired is check.ErrUpstreamRequired: the user has no usable TI.
var ErrUpstreamRequired = check.ErrUpstreamRequired

var _ check.UpstreamTokens = (*Service)(nil)

// load reads and opens the TI of (subject, routeID).
func (s *Service) load(ctx context.Context, subject, routeID string) (Token, error) {
	rec, err := s.store.GetUpstreamToken(ctx, subject, routeID, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return Token{}, ErrUpstreamRequired
	}
	if err != nil {
		return Token{}, fmt.Errorf("read upstream token: %w", err)
	}
	return s.open(rec)
}

// open unseals a stored TI.
func (s *Service) open(rec store.UpstreamToken) (Token, error) {
	raw, err := s.sealer.Open(rec.Sealed, sealPurpose(rec.Subject, rec.RouteID))
	if err != nil {
		return Token{}, fmt.Errorf("%w: the stored token cannot be opened", ErrUpstreamRequired)
	}
	var t Token
	if err := json.Unmarshal(raw, &t); err != nil || t.AccessToken == "" {
		return Token{}, fmt.Errorf("%w: the stored token is malformed", ErrUpstreamRequired)
	}
	return t, nil
}

// record seals t as the stored TI of (subject, routeID).
func (s *Service) record(subject, routeID string, t Token) (store.UpstreamToken, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return store.UpstreamToken{}, err
	}
	rec := store.UpstreamToken{
		Subject: subject, RouteID: routeID, UpdatedAt: s.now(),
		Sealed: s.sealer.Seal(raw, sealPurpose(subject, routeID)),
	}
	if t.RefreshToken == "" {
		rec.ExpiresAt = t.Expiry // garbage once the access token has expired
	}
	return rec, nil
}

// save stores t as the TI of (subject, routeID), replacing any (and ending any refresh lease).
func (s *Service) save(ctx context.Context, subject, routeID string, t Token) error {
	rec, err := s.record(subject, routeID, t)
	if err != nil {
		return err
	}
	return s.store.PutUpstreamToken(ctx, rec)
}

// minUse is the least time a TI handed to a check is good for. A check answer expires when
// its TI is due (useUntil), and the assertion signed for it has whole-second times: an answer
// expiring within the second cannot be signed and would be a 401 invalid_token, which makes
// a client throw its token away. So a TI due within minUse counts as due now, and an old TI
// expiring within minUse is not handed out.
const minUse = 2 * time.Second

// valid: the access token has not expired. usable: nor will it within minUse. fresh: nor
// is it due for refresh (RefreshMargin before it expires) within minUse.
func valid(t Token, now time.Time) bool  { return t.Expiry.IsZero() || now.Before(t.Expiry) }
func usable(t Token, now time.Time) bool { return valid(t, now.Add(minUse)) }
func fresh(t Token, now time.Time) bool {
	return t.Expiry.IsZero() || now.Add(minUse).Before(t.Expiry.Add(-RefreshMargin))
}

// useUntil is how long a check answer carrying t may be cached: until it is due for refresh
// (at least minUse from now), or, once it is, until it expires.
func useUntil(t Token, now time.Time) time.Time {
	if t.Expiry.IsZero() {
		return time.Time{}
	}
	if r := t.Expiry.Add(-RefreshMargin); now.Add(minUse).Before(r) {
		return r
	}
	return t.Expiry
}

// Connected reports whether the user has a usable TI for routeID: unexpired, or refreshable.
func (s *Service) Connected(ctx context.Context, subject, routeID string) (bool, error) {
	t, err := s.load(ctx, subject, routeID)
	if errors.Is(err, ErrUpstreamRequired) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return valid(t, s.now()) || t.RefreshToken != "", nil
}

// DisconnectRoute removes the user's TI of routeID; a missing one is not an error.
func (s *Service) DisconnectRoute(ctx context.Context, subject, routeID string) error {
	err := s.store.DeleteUpstreamToken(ctx, subject, routeID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// Token implements check.UpstreamTokens: the user's TI of routeID and how long it may be
// used, refreshing it when it expires within RefreshMargin. A request waits at most
// refreshWait for a refresh while the old TI is still valid. Errors wrapping
// ErrUpstreamRequired mean the user must connect again (no TI, or the provider refused its
// refresh token); other errors are transient and name no secret.
func (s *Service) Token(ctx context.Context, subject, routeID string) (string, time.Time, error) {
	rt, ok := s.routes[routeID]
	if !ok {
		return "", time.Time{}, errNoRoute
	}
	t, err := s.load(ctx, subject, routeID)
	if err != nil {
		return "", time.Time{}, err
	}
	now := s.now()
	if fresh(t, now) {
		return t.AccessToken, useUntil(t, now), nil
	}
	if t.RefreshToken == "" {
		if valid(t, now) {
			return t.AccessToken, t.Expiry, nil
		}
		return "", time.Time{}, fmt.Errorf("%w: the token expired and cannot be refreshed", ErrUpstreamRequired)
	}
	f := s.startRefresh(rt, subject)
	var wait <-chan time.Time
	if usable(t, now) {
		timer := time.NewTimer(refreshWait)
		defer timer.Stop()
		wait = timer.C
	}
	select {
	case <-f.done:
	case <-wait:
		return t.AccessToken, t.Expiry, nil
	case <-ctx.Done():
		return "", time.Time{}, ctx.Err()
	}
	if f.err == nil {
		return f.tok.AccessToken, useUntil(f.tok, s.now()), nil
	}
	if !errors.Is(f.err, ErrUpstreamRequired) && usable(t, s.now()) {
		return t.AccessToken, t.Expiry, nil
	}
	return "", time.Time{}, f.err
}

// flightKey names one (user, route) refresh.
type flightKey struct{ subject, routeID string }

// flight is one refresh in progress in this process; done closes when tok/err are set.
type flight struct {
	done chan struct{}
	tok  Token
	err  error
}

// startRefresh joins this process's refresh of (subject, rt) or starts one. The refresh runs
// detached from the request that started it, bounded by leaseTTL.
func (s *Service) startRefresh(rt *Route, subject string) *flight {
	k := flightKey{subject, rt.ID}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.flights[k]; ok {
		return f
	}
	f := &flight{done: make(chan struct{})}
	s.flights[k] = f
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
		defer cancel()
		f.tok, f.err = s.refresh(ctx, rt, subject)
		s.mu.Lock()
		delete(s.flights, k)
		s.mu.Unlock()
		close(f.done)
	}()
	return f
}

// refresh refreshes the TI of (subject, rt) under the store lease: of every replica, only
// the lease holder spends the upstream refresh token; the others wait for its result.
func (s *Service) refresh(ctx context.Context, rt *Route, subject string) (Token, error) {
	if t, ok := s.pendingToken(flightKey{subject, rt.ID}); ok {
		return t, nil // refreshed here, not yet stored: its predecessor may be spent
	}
	holder := secret.NewToken()
	var rec store.UpstreamToken
	for {
		now := s.now()
		var err error
		rec, err = s.store.LeaseUpstreamToken(ctx, subject, rt.ID, holder, now.Add(leaseTTL), now)
		if err == nil {
			break
		}
		if errors.Is(err, store.ErrNotFound) {
			return Token{}, fmt.Errorf("%w: the token was removed", ErrUpstreamRequired)
		}
		if !errors.Is(err, store.ErrConflict) {
			return Token{}, fmt.Errorf("lease upstream token: %w", err)
		}
		// Another replica is refreshing: take its result when it lands.
		select {
		case <-ctx.Done():
			return Token{}, errors.New("upstream token refresh: timed out waiting for another replica's refresh")
		case <-time.After(leasePoll):
		}
		if t, err := s.load(ctx, subject, rt.ID); err == nil && fresh(t, s.now()) {
			return t, nil
		}
	}
	t, err := s.open(rec)
	if err != nil {
		s.release(rt, subject, holder, true)
		return Token{}, err
	}
	if fresh(t, s.now()) || t.RefreshToken == "" {
		// Refreshed meanwhile by another holder (or not refreshable): nothing to spend.
		s.release(rt, subject, holder, false)
		if !valid(t, s.now()) {
			return Token{}, fmt.Errorf("%w: the token expired and cannot be refreshed", ErrUpstreamRequired)
		}
		return t, nil
	}
	p, err := s.upstreamAS(ctx, rt)
	if err != nil {
		s.events.Refresh(RefreshFailed)
		s.log.WarnContext(ctx, "upstream token refresh: provider unavailable", "route_id", rt.ID, "sub", subject, "error", err.Error())
		s.release(rt, subject, holder, false)
		return Token{}, err
	}
	if p.disc != nil && t.Issuer != p.issuer {
		// The upstream now names another authorization server: the refresh token goes to the
		// one that issued it or nowhere, and the user connects again.
		s.events.Refresh(RefreshRefused)
		s.log.WarnContext(ctx, "upstream token refresh: the discovered authorization server changed; the user must connect again", "route_id", rt.ID, "sub", subject)
		s.release(rt, subject, holder, true)
		return Token{}, fmt.Errorf("%w: the upstream's authorization server changed", ErrUpstreamRequired)
	}
	nt, err := s.exchange(ctx, rt, p, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {t.RefreshToken}})
	if err != nil {
		s.afterTokenError(ctx, rt, p, err)
	}
	if errors.Is(err, ErrInvalidGrant) {
		s.events.Refresh(RefreshRefused)
		s.log.InfoContext(ctx, "upstream refresh token refused; the user must connect again", "route_id", rt.ID, "sub", subject, "error", err.Error())
		s.release(rt, subject, holder, true)
		return Token{}, fmt.Errorf("%w: the provider refused the refresh token", ErrUpstreamRequired)
	}
	if err != nil {
		s.events.Refresh(RefreshFailed)
		s.log.WarnContext(ctx, "upstream token refresh failed", "route_id", rt.ID, "sub", subject, "error", err.Error())
		s.release(rt, subject, holder, false)
		return Token{}, err
	}
	s.events.Refresh(RefreshRefreshed)
	if nt.RefreshToken == "" {
		nt.RefreshToken = t.RefreshToken // not rotated: keep using the old one
	}
	if nt.Scope == "" {
		nt.Scope = t.Scope
	}
	nt.Issuer = t.Issuer
	next, err := s.record(subject, rt.ID, nt)
	if err != nil {
		s.release(rt, subject, holder, false)
		return Token{}, err
	}
	switch err := s.store.ReplaceLeasedUpstreamToken(ctx, next, holder); {
	case errors.Is(err, store.ErrNotFound):
		// Disconnected while refreshing: the user asked for no token.
		return Token{}, fmt.Errorf("%w: disconnected during refresh", ErrUpstreamRequired)
	case errors.Is(err, store.ErrConflict):
		// A new connect replaced the token meanwhile (or the lease ran out): that one stays.
		s.log.WarnContext(ctx, "upstream token changed during refresh; keeping the stored one", "route_id", rt.ID, "sub", subject)
	case err != nil:
		// The provider has answered, and may have spent the refresh token still stored: the
		// new TI must not be lost with the store (a database restart, a dropped connection).
		// It is kept here and stored as soon as the store takes it; meanwhile this process
		// hands it out.
		s.log.WarnContext(ctx, "storing the refreshed upstream token failed; keeping it until the store takes it", "route_id", rt.ID, "sub", subject, "error", err.Error())
		s.keepPending(flightKey{subject, rt.ID}, next, holder, nt)
		return nt, nil
	}
	s.log.DebugContext(ctx, "upstream token refreshed", "route_id", rt.ID, "sub", subject)
	return nt, nil
}

// release ends holder's lease, deleting the TI when remove is set.
func (s *Service) release(rt *Route, subject, holder string, remove bool) {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	if err := s.store.ReleaseUpstreamLease(ctx, subject, rt.ID, holder, remove); err != nil &&
		!errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
		s.log.WarnContext(ctx, "release upstream token lease", "route_id", rt.ID, "error", err.Error())
	}
}

// SaveToken stores t as the user's TI of routeID, as a completed connect flow does (for
// tools and tests that obtain a token otherwise).
func (s *Service) SaveToken(ctx context.Context, subject, routeID string, t Token) error {
	if _, ok := s.routes[routeID]; !ok {
		return errNoRoute
	}
	return s.save(ctx, subject, routeID, t)
}

// SealPurpose is the secret.Sealer purpose of the stored TI of (subject, routeID): the seal
// binds both.
func SealPurpose(subject, routeID string) string { return sealPurpose(subject, routeID) }

// Pending TIs: refreshed at the provider but not yet stored (the store failed).
const (
	// pendingFor is how long a pending TI is offered to the store before it is given up
	// (logged as an error; the user will have to connect again).
	pendingFor = 10 * time.Minute
	// pendingRetryMin and pendingRetryMax bound the wait between two attempts: short, so
	// that the TI is stored soon after the store is back, before another replica can lease
	// the stored one and spend its (spent) refresh token.
	pendingRetryMin = 100 * time.Millisecond
	pendingRetryMax = 2 * time.Second
)

// pendingToken returns the pending TI of k while it is still valid.
func (s *Service) pendingToken(k flightKey) (Token, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.pending[k]
	return t, ok && usable(t, s.now())
}

// keepPending holds t, sealed as rec, as the pending TI of k and offers it to the store
// under holder's lease until the store takes it, refuses it (the TI was removed, or another
// connect replaced it) or pendingFor has passed. The lease may have run out by then: the
// store still takes it as long as nobody else leased the TI meanwhile.
func (s *Service) keepPending(k flightKey, rec store.UpstreamToken, holder string, t Token) {
	s.mu.Lock()
	if s.pending == nil {
		s.pending = map[flightKey]Token{}
	}
	s.pending[k] = t
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			if s.pending[k] == t {
				delete(s.pending, k)
			}
			s.mu.Unlock()
		}()
		wait, giveUp := pendingRetryMin, time.Now().Add(pendingFor)
		for {
			time.Sleep(wait)
			ctx, cancel := context.WithTimeout(context.Background(), s.callTimeout)
			err := s.store.ReplaceLeasedUpstreamToken(ctx, rec, holder)
			cancel()
			switch {
			case err == nil:
				s.log.Info("refreshed upstream token stored after the store came back", "route_id", k.routeID, "sub", k.subject)
				return
			case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict):
				s.log.Warn("refreshed upstream token not stored: the stored one was removed or replaced meanwhile", "route_id", k.routeID, "sub", k.subject)
				return
			case time.Now().After(giveUp):
				s.log.Error("refreshed upstream token given up: the store did not take it", "route_id", k.routeID, "sub", k.subject, "error", err.Error())
				return
			}
			wait = min(2*wait, pendingRetryMax)
		}
	}()
}
