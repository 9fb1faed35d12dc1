package obs

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Store decorates a store.Store: each method is timed (store_operation_duration_seconds,
// by method name), counted when it fails (store_errors_total; the sentinel answers
// ErrNotFound, ErrAlreadyExists, ErrRefreshReused and ErrConflict are not failures) and,
// with a tracer, traced as a child span "store.<Method>". It adds no behaviour otherwise.
type Store struct {
	next    store.Store
	m       *Metrics
	tracer  trace.Tracer
	counter SessionCounter // next's, if it counts sessions
}

var _ store.Store = (*Store)(nil)

// InstrumentStore returns next decorated. m and tracer may be nil.
func InstrumentStore(next store.Store, m *Metrics, tracer trace.Tracer) *Store {
	s := &Store{next: next, m: m, tracer: tracer}
	s.counter, _ = next.(SessionCounter)
	return s
}

// Unwrap returns the decorated store.
func (s *Store) Unwrap() store.Store { return s.next }

// CountLiveSessions forwards to the decorated store; it fails if that store cannot count.
func (s *Store) CountLiveSessions(ctx context.Context, now time.Time) (int64, error) {
	if s.counter == nil {
		return 0, errors.New("store: cannot count sessions")
	}
	return s.counter.CountLiveSessions(ctx, now)
}

// CanCountSessions reports whether the decorated store implements SessionCounter.
func (s *Store) CanCountSessions() bool { return s.counter != nil }

// begin starts an operation; its end records it.
func (s *Store) begin(ctx context.Context, method string) (context.Context, func(error)) {
	start := time.Now()
	var span trace.Span
	if s.tracer != nil {
		ctx, span = s.tracer.Start(ctx, "store."+method, trace.WithSpanKind(trace.SpanKindClient))
	}
	return ctx, func(err error) {
		failed := err != nil && !isAnswer(err)
		if s.m != nil {
			s.m.storeDuration.WithLabelValues(method).Observe(time.Since(start).Seconds())
			if failed {
				s.m.storeErrors.WithLabelValues(method).Inc()
			}
		}
		if span != nil {
			if failed {
				span.SetStatus(codes.Error, "store error")
			}
			span.End()
		}
	}
}

// isAnswer reports whether err is one of the store's sentinel answers.
func isAnswer(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrAlreadyExists) ||
		errors.Is(err, store.ErrRefreshReused) || errors.Is(err, store.ErrConflict) ||
		errors.Is(err, context.Canceled)
}

func (s *Store) CreateClient(ctx context.Context, c store.Client) (err error) {
	ctx, end := s.begin(ctx, "CreateClient")
	defer func() { end(err) }()
	return s.next.CreateClient(ctx, c)
}

func (s *Store) GetClient(ctx context.Context, id string, now time.Time) (_ store.Client, err error) {
	ctx, end := s.begin(ctx, "GetClient")
	defer func() { end(err) }()
	return s.next.GetClient(ctx, id, now)
}

func (s *Store) TouchClient(ctx context.Context, id string, usedAt, expiresAt time.Time) (err error) {
	ctx, end := s.begin(ctx, "TouchClient")
	defer func() { end(err) }()
	return s.next.TouchClient(ctx, id, usedAt, expiresAt)
}

func (s *Store) DeleteClient(ctx context.Context, id string) (err error) {
	ctx, end := s.begin(ctx, "DeleteClient")
	defer func() { end(err) }()
	return s.next.DeleteClient(ctx, id)
}

func (s *Store) CreateAuthCode(ctx context.Context, c store.AuthCode) (err error) {
	ctx, end := s.begin(ctx, "CreateAuthCode")
	defer func() { end(err) }()
	return s.next.CreateAuthCode(ctx, c)
}

func (s *Store) GetAuthCode(ctx context.Context, hash []byte, now time.Time) (_ store.AuthCode, err error) {
	ctx, end := s.begin(ctx, "GetAuthCode")
	defer func() { end(err) }()
	return s.next.GetAuthCode(ctx, hash, now)
}

func (s *Store) TakeAuthCode(ctx context.Context, hash []byte, now time.Time) (_ store.AuthCode, err error) {
	ctx, end := s.begin(ctx, "TakeAuthCode")
	defer func() { end(err) }()
	return s.next.TakeAuthCode(ctx, hash, now)
}

func (s *Store) CreateGrant(ctx context.Context, g store.Grant, first store.RefreshToken) (err error) {
	ctx, end := s.begin(ctx, "CreateGrant")
	defer func() { end(err) }()
	return s.next.CreateGrant(ctx, g, first)
}

func (s *Store) GetGrant(ctx context.Context, id string) (_ store.Grant, err error) {
	ctx, end := s.begin(ctx, "GetGrant")
	defer func() { end(err) }()
	return s.next.GetGrant(ctx, id)
}

func (s *Store) GetRefreshToken(ctx context.Context, hash []byte, now time.Time) (_ store.RefreshToken, _ store.Grant, err error) {
	ctx, end := s.begin(ctx, "GetRefreshToken")
	defer func() { end(err) }()
	return s.next.GetRefreshToken(ctx, hash, now)
}

func (s *Store) RotateRefreshToken(ctx context.Context, oldHash []byte, next store.RefreshToken, now time.Time) (_ store.Grant, err error) {
	ctx, end := s.begin(ctx, "RotateRefreshToken")
	defer func() { end(err) }()
	return s.next.RotateRefreshToken(ctx, oldHash, next, now)
}

func (s *Store) RotateRefreshTokenWithin(ctx context.Context, oldHash []byte, next store.RefreshToken, now time.Time, reuse time.Duration) (_ store.Grant, err error) {
	ctx, end := s.begin(ctx, "RotateRefreshToken")
	defer func() { end(err) }()
	return s.next.RotateRefreshTokenWithin(ctx, oldHash, next, now, reuse)
}

func (s *Store) RevokeGrant(ctx context.Context, id string, now time.Time) (err error) {
	ctx, end := s.begin(ctx, "RevokeGrant")
	defer func() { end(err) }()
	return s.next.RevokeGrant(ctx, id, now)
}

func (s *Store) ListGrantsBySession(ctx context.Context, sessionID string) (_ []store.Grant, err error) {
	ctx, end := s.begin(ctx, "ListGrantsBySession")
	defer func() { end(err) }()
	return s.next.ListGrantsBySession(ctx, sessionID)
}

func (s *Store) RevokeGrantsBySession(ctx context.Context, sessionID string, now time.Time) (_ int64, err error) {
	ctx, end := s.begin(ctx, "RevokeGrantsBySession")
	defer func() { end(err) }()
	return s.next.RevokeGrantsBySession(ctx, sessionID, now)
}

func (s *Store) CreateAccessToken(ctx context.Context, t store.AccessToken) (err error) {
	ctx, end := s.begin(ctx, "CreateAccessToken")
	defer func() { end(err) }()
	return s.next.CreateAccessToken(ctx, t)
}

func (s *Store) GetAccessToken(ctx context.Context, hash []byte, now time.Time) (_ store.AccessToken, err error) {
	ctx, end := s.begin(ctx, "GetAccessToken")
	defer func() { end(err) }()
	return s.next.GetAccessToken(ctx, hash, now)
}

func (s *Store) DeleteAccessToken(ctx context.Context, hash []byte) (err error) {
	ctx, end := s.begin(ctx, "DeleteAccessToken")
	defer func() { end(err) }()
	return s.next.DeleteAccessToken(ctx, hash)
}

func (s *Store) CreateSession(ctx context.Context, v store.Session) (err error) {
	ctx, end := s.begin(ctx, "CreateSession")
	defer func() { end(err) }()
	return s.next.CreateSession(ctx, v)
}

func (s *Store) GetSession(ctx context.Context, id string) (_ store.Session, err error) {
	ctx, end := s.begin(ctx, "GetSession")
	defer func() { end(err) }()
	return s.next.GetSession(ctx, id)
}

func (s *Store) UpdateSession(ctx context.Context, v store.Session) (_ int64, err error) {
	ctx, end := s.begin(ctx, "UpdateSession")
	defer func() { end(err) }()
	return s.next.UpdateSession(ctx, v)
}

func (s *Store) RevokeSession(ctx context.Context, id string, now time.Time) (err error) {
	ctx, end := s.begin(ctx, "RevokeSession")
	defer func() { end(err) }()
	return s.next.RevokeSession(ctx, id, now)
}

func (s *Store) CreateBrowserCookie(ctx context.Context, c store.BrowserCookie) (err error) {
	ctx, end := s.begin(ctx, "CreateBrowserCookie")
	defer func() { end(err) }()
	return s.next.CreateBrowserCookie(ctx, c)
}

func (s *Store) GetBrowserCookie(ctx context.Context, hash []byte, host string, now time.Time) (_ store.BrowserCookie, _ store.Session, err error) {
	ctx, end := s.begin(ctx, "GetBrowserCookie")
	defer func() { end(err) }()
	return s.next.GetBrowserCookie(ctx, hash, host, now)
}

func (s *Store) DeleteBrowserCookie(ctx context.Context, hash []byte) (err error) {
	ctx, end := s.begin(ctx, "DeleteBrowserCookie")
	defer func() { end(err) }()
	return s.next.DeleteBrowserCookie(ctx, hash)
}

func (s *Store) PutUpstreamToken(ctx context.Context, t store.UpstreamToken) (err error) {
	ctx, end := s.begin(ctx, "PutUpstreamToken")
	defer func() { end(err) }()
	return s.next.PutUpstreamToken(ctx, t)
}

func (s *Store) GetUpstreamToken(ctx context.Context, subject, routeID string, now time.Time) (_ store.UpstreamToken, err error) {
	ctx, end := s.begin(ctx, "GetUpstreamToken")
	defer func() { end(err) }()
	return s.next.GetUpstreamToken(ctx, subject, routeID, now)
}

func (s *Store) DeleteUpstreamToken(ctx context.Context, subject, routeID string) (err error) {
	ctx, end := s.begin(ctx, "DeleteUpstreamToken")
	defer func() { end(err) }()
	return s.next.DeleteUpstreamToken(ctx, subject, routeID)
}

func (s *Store) PutOneTime(ctx context.Context, v store.OneTime) (err error) {
	ctx, end := s.begin(ctx, "PutOneTime")
	defer func() { end(err) }()
	return s.next.PutOneTime(ctx, v)
}

func (s *Store) GetOneTime(ctx context.Context, hash []byte, kind string, now time.Time) (_ store.OneTime, err error) {
	ctx, end := s.begin(ctx, "GetOneTime")
	defer func() { end(err) }()
	return s.next.GetOneTime(ctx, hash, kind, now)
}

func (s *Store) TakeOneTime(ctx context.Context, hash []byte, kind string, now time.Time) (_ store.OneTime, err error) {
	ctx, end := s.begin(ctx, "TakeOneTime")
	defer func() { end(err) }()
	return s.next.TakeOneTime(ctx, hash, kind, now)
}

func (s *Store) DeleteExpired(ctx context.Context, now time.Time) (_ int64, err error) {
	ctx, end := s.begin(ctx, "DeleteExpired")
	defer func() { end(err) }()
	return s.next.DeleteExpired(ctx, now)
}

// Close closes the decorated store (not timed).
func (s *Store) Close() error { return s.next.Close() }
