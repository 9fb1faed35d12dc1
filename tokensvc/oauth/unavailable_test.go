package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/hosts"
	"github.com/mcpmesh/gateway/tokensvc/reqid"
	"github.com/mcpmesh/gateway/tokensvc/store"
	"github.com/mcpmesh/gateway/tokensvc/store/memory"
)

// errStoreDown is what a store returns while its database is unreachable.
var errStoreDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

// faultyStore fails the named methods with errStoreDown while they are switched on.
type faultyStore struct {
	store.Store
	mu   sync.Mutex
	down map[string]bool
}

func (f *faultyStore) fail(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down[method] || f.down["*"] {
		return errStoreDown
	}
	return nil
}

func (f *faultyStore) set(methods ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = map[string]bool{}
	for _, m := range methods {
		f.down[m] = true
	}
}

func (f *faultyStore) GetClient(ctx context.Context, id string, now time.Time) (store.Client, error) {
	if err := f.fail("GetClient"); err != nil {
		return store.Client{}, err
	}
	return f.Store.GetClient(ctx, id, now)
}

func (f *faultyStore) CreateClient(ctx context.Context, c store.Client) error {
	if err := f.fail("CreateClient"); err != nil {
		return err
	}
	return f.Store.CreateClient(ctx, c)
}

func (f *faultyStore) GetAuthCode(ctx context.Context, h []byte, now time.Time) (store.AuthCode, error) {
	if err := f.fail("GetAuthCode"); err != nil {
		return store.AuthCode{}, err
	}
	return f.Store.GetAuthCode(ctx, h, now)
}

func (f *faultyStore) TakeAuthCode(ctx context.Context, h []byte, now time.Time) (store.AuthCode, error) {
	if err := f.fail("TakeAuthCode"); err != nil {
		return store.AuthCode{}, err
	}
	return f.Store.TakeAuthCode(ctx, h, now)
}

func (f *faultyStore) GetSession(ctx context.Context, id string) (store.Session, error) {
	if err := f.fail("GetSession"); err != nil {
		return store.Session{}, err
	}
	return f.Store.GetSession(ctx, id)
}

func (f *faultyStore) CreateGrant(ctx context.Context, g store.Grant, first store.RefreshToken) error {
	if err := f.fail("CreateGrant"); err != nil {
		return err
	}
	return f.Store.CreateGrant(ctx, g, first)
}

func (f *faultyStore) GetRefreshToken(ctx context.Context, h []byte, now time.Time) (store.RefreshToken, store.Grant, error) {
	if err := f.fail("GetRefreshToken"); err != nil {
		return store.RefreshToken{}, store.Grant{}, err
	}
	return f.Store.GetRefreshToken(ctx, h, now)
}

func (f *faultyStore) RotateRefreshTokenWithin(ctx context.Context, h []byte, next store.RefreshToken, now time.Time, reuse time.Duration) (store.Grant, error) {
	if err := f.fail("RotateRefreshToken"); err != nil {
		return store.Grant{}, err
	}
	g, err := f.Store.RotateRefreshTokenWithin(ctx, h, next, now, reuse)
	if err == nil {
		// The rotation committed, and the connection died before its answer came back.
		err = f.fail("RotateRefreshTokenAnswer")
	}
	return g, err
}

func (f *faultyStore) CreateAccessToken(ctx context.Context, t store.AccessToken) error {
	if err := f.fail("CreateAccessToken"); err != nil {
		return err
	}
	return f.Store.CreateAccessToken(ctx, t)
}

func (f *faultyStore) GetAccessToken(ctx context.Context, h []byte, now time.Time) (store.AccessToken, error) {
	if err := f.fail("GetAccessToken"); err != nil {
		return store.AccessToken{}, err
	}
	return f.Store.GetAccessToken(ctx, h, now)
}

// newFaultyEnv is newEnv with the server's store behind a faultyStore (e.st stays the
// healthy memory store, for setting up).
func newFaultyEnv(t *testing.T) (*env, *faultyStore) {
	t.Helper()
	cfg := testConfig()
	st := memory.New()
	fst := &faultyStore{Store: st}
	clock := &testClock{t: time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)}
	fs := &fakeSessions{st: st, clock: clock}
	srv := New(cfg, fst, fs, WithClock(clock.Now))
	r := chi.NewRouter()
	r.Use(reqid.Middleware, hosts.NewTable(cfg).Middleware)
	routeForTest(r, srv)
	return &env{t: t, cfg: cfg, st: st, clock: clock, sessions: fs, srv: srv, handler: r}, fst
}

// wantUnavailable checks an answer is 503 temporarily_unavailable with Retry-After.
func wantUnavailable(t *testing.T, what string, rec interface {
	Result() *http.Response
}) {
	t.Helper()
	res := rec.Result()
	var eb errorBody
	_ = json.NewDecoder(res.Body).Decode(&eb)
	if res.StatusCode != http.StatusServiceUnavailable || eb.Error != errTemporarilyUnavailable {
		t.Errorf("%s: got %d %q, want 503 %q", what, res.StatusCode, eb.Error, errTemporarilyUnavailable)
	}
	if res.Header.Get("Retry-After") == "" {
		t.Errorf("%s: no Retry-After", what)
	}
}

// A store failure at any step of the token endpoint is answered 503
// temporarily_unavailable with Retry-After: never invalid_grant (which makes a client
// discard its tokens and sign the user out) nor invalid_client (which makes it drop its
// registration), nor a bare 500. Once the store is back, the same code or refresh token
// works, even past the refresh token reuse interval: nothing was spent by the failed attempt.
func TestToken_StoreFailureIsTemporarilyUnavailable(t *testing.T) {
	t.Parallel()
	refreshSteps := []string{"*", "GetClient", "GetRefreshToken", "GetSession", "RotateRefreshToken", "CreateAccessToken"}
	for _, step := range refreshSteps {
		t.Run("refresh/"+step, func(t *testing.T) {
			t.Parallel()
			e, fst := newFaultyEnv(t)
			c := e.register(nil)
			_, first := e.fullFlow(c, "alice")
			fst.set(step)
			for range 3 {
				wantUnavailable(t, "refresh with "+step+" down", e.token(c, refreshForm(first.RefreshToken)))
			}
			fst.set()
			// The client retries once the store is back, which may be long after the reuse
			// interval: the failed attempt must not have spent the refresh token (a spent one
			// presented again past the interval revokes the family).
			e.clock.Advance(e.srv.reuseInterval + time.Second)
			next := tokens(t, e.token(c, refreshForm(first.RefreshToken)))
			mustAccess(t, e, next.AccessToken)
		})
	}
	// The rotation committed but its answer was lost: the client got 503 and retries with
	// the old refresh token once the store is back, past the reuse interval. The server that
	// failed to answer grants it the successor the rotation stored (one live refresh token
	// left); the same token from another client is still a reuse.
	t.Run("refresh/rotation committed, answer lost", func(t *testing.T) {
		t.Parallel()
		e, fst := newFaultyEnv(t)
		c, other := e.register(nil), e.register(nil)
		_, first := e.fullFlow(c, "alice")
		fst.set("RotateRefreshTokenAnswer")
		wantUnavailable(t, "refresh whose answer was lost", e.token(c, refreshForm(first.RefreshToken)))
		fst.set()
		e.clock.Advance(e.srv.reuseInterval + time.Minute)
		wantOAuthError(t, e.token(other, refreshForm(first.RefreshToken)), 400, errInvalidGrant)
		e2, fst2 := newFaultyEnv(t)
		c2 := e2.register(nil)
		_, first2 := e2.fullFlow(c2, "bob")
		fst2.set("RotateRefreshTokenAnswer")
		wantUnavailable(t, "refresh whose answer was lost", e2.token(c2, refreshForm(first2.RefreshToken)))
		fst2.set()
		e2.clock.Advance(e2.srv.reuseInterval + time.Minute)
		next := tokens(t, e2.token(c2, refreshForm(first2.RefreshToken)))
		mustAccess(t, e2, next.AccessToken)
		again := tokens(t, e2.token(c2, refreshForm(next.RefreshToken)))
		mustAccess(t, e2, again.AccessToken)
	})
	codeSteps := []string{"*", "GetClient", "GetAuthCode", "TakeAuthCode", "GetSession", "CreateGrant", "CreateAccessToken"}
	for _, step := range codeSteps {
		t.Run("code/"+step, func(t *testing.T) {
			t.Parallel()
			e, fst := newFaultyEnv(t)
			c := e.register(nil)
			sess := e.newSession("alice")
			code, verifier := e.authorizeCode(c, sess, nil)
			fst.set(step)
			wantUnavailable(t, "code redemption with "+step+" down", e.token(c, codeForm(c, code, verifier)))
			fst.set()
			// A failure before the spend leaves the code redeemable; at or after it the
			// code is gone (single use), and the client signs in again.
			rec := e.token(c, codeForm(c, code, verifier))
			switch step {
			case "*", "GetClient", "GetAuthCode", "TakeAuthCode":
				mustAccess(t, e, tokens(t, rec).AccessToken)
			default:
				wantOAuthError(t, rec, 400, errInvalidGrant)
			}
		})
	}
	t.Run("register", func(t *testing.T) {
		t.Parallel()
		e, fst := newFaultyEnv(t)
		fst.set("CreateClient")
		req := httptest.NewRequest(http.MethodPost, issuer+paths.Register, strings.NewReader(`{"redirect_uris":["`+loopbackCB+`"],"token_endpoint_auth_method":"none"}`))
		req.Header.Set("Content-Type", "application/json")
		wantUnavailable(t, "registration", e.do(req))
	})
	// The browser pages of the authorization flow: a store failure is a 503 page with
	// Retry-After (never a 500, nor "unknown application", which would send the user away),
	// and the flow works once the store is back.
	t.Run("authorize", func(t *testing.T) {
		t.Parallel()
		e, fst := newFaultyEnv(t)
		c := e.register(nil)
		sess := e.newSession("alice")
		_, challenge := pkce()
		authorize := issuer + paths.Authorize + "?" + authParams(c, challenge).Encode()
		fst.set("GetClient")
		wantUnavailablePage(t, "authorize", e.get(authorize, sess.ID))
		fst.set()
		handle := consentHandle(t, e.get(authorize, sess.ID))
		fst.set("GetClient")
		wantUnavailablePage(t, "consent", e.answerConsent(issuer, sess.ID, handle, actionApprove))
		fst.set()
		if rec := e.answerConsent(issuer, sess.ID, handle, actionApprove); rec.Code != http.StatusSeeOther || location(t, rec).Query().Get("code") == "" {
			t.Fatalf("consent after the store is back: %d %s", rec.Code, rec.Header().Get("Location"))
		}
	})
	t.Run("revoke", func(t *testing.T) {
		t.Parallel()
		e, fst := newFaultyEnv(t)
		c := e.register(nil)
		_, first := e.fullFlow(c, "alice")
		fst.set("GetRefreshToken", "GetAccessToken")
		wantUnavailable(t, "revocation", e.postForm(issuer+paths.Revoke, url.Values{"token": {first.RefreshToken}, "client_id": {c.ID}}, ""))
	})
}

// wantUnavailablePage checks an HTML answer is 503 with Retry-After, asks the user to try
// again and names a request ID.
func wantUnavailablePage(t *testing.T, what string, rec *httptest.ResponseRecorder) {
	t.Helper()
	body := rec.Body.String()
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(body, "Try again") || !strings.Contains(body, "Request ID") || strings.Contains(body, errStoreDown.Error()) {
		t.Errorf("%s with the store down: %d (Retry-After %q), want a 503 page asking to try again with a request ID:\n%s",
			what, rec.Code, rec.Header().Get("Retry-After"), body)
	}
}
