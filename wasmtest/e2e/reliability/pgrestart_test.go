package reliability

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store/postgres/pgtest"
)

// The phases of a fault under load: before it, from its start until the token service
// answers a refresh again, and after that.
const (
	phaseBefore = iota
	phaseDuring
	phaseAfter
)

var phaseNames = [...]string{"before", "during", "after"}

// faultLoad is every user sending, over and over while a fault comes and goes: a refresh;
// a tool call with the access token it returned (no decision cached for it); a tool call
// with the token primed before the fault (decision cached); a tool call with a garbage
// token. Before and after the fault everything legitimate must succeed; during it a refresh
// may only be 200 or 503 temporarily_unavailable (never invalid_grant: a refresh token lost),
// an uncached request 200 or 503 (never 401), a cached one 200; a garbage token never passes.
type faultLoad struct {
	t       *testing.T
	s       *rstack
	phase   atomic.Int32
	tallies [3][4]*tally // by phase: refresh, uncached, cached, garbage
	lastOK  atomic.Int64 // UnixNano of the last refresh answered 200
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startFaultLoad(t *testing.T, s *rstack, users []*user, name string) *faultLoad {
	l := &faultLoad{t: t, s: s, stop: make(chan struct{})}
	for p, pn := range phaseNames {
		for k, kn := range []string{"refresh", "uncached MCP requests", "cached MCP requests", "garbage tokens"} {
			l.tallies[p][k] = newTally(fmt.Sprintf("%s: %s (%s)", name, kn, pn))
		}
	}
	for _, u := range users {
		l.wg.Go(func() { l.run(u) })
	}
	return l
}

// timed runs one request and returns the phase it belongs to: the phase it was sent and
// answered in, or during when the phase changed meanwhile.
func (l *faultLoad) timed(f func()) (int, time.Duration) {
	p, start := l.phase.Load(), time.Now()
	f()
	d := time.Since(start)
	if l.phase.Load() != p {
		return phaseDuring, d
	}
	return int(p), d
}

func (l *faultLoad) run(u *user) {
	t := l.t
	for {
		select {
		case <-l.stop:
			return
		default:
		}
		var st int
		var code string
		var tr *tokenResponse
		p, d := l.timed(func() { st, code, tr = u.c.refreshStatus(u.refresh) })
		l.tallies[p][0].add(st, d, false)
		switch {
		case st == http.StatusOK:
			u.refresh, u.uncached = tr.RefreshToken, tr.AccessToken
			l.lastOK.Store(time.Now().UnixNano())
		case code == "invalid_grant":
			t.Errorf("refresh (%s): invalid_grant: the refresh token was lost", phaseNames[p])
			return
		case p == phaseDuring && st == http.StatusServiceUnavailable && code == "temporarily_unavailable":
		default:
			t.Errorf("refresh (%s): %d %q", phaseNames[p], st, code)
		}
		p, d = l.timed(func() { st = mcp(l.s.MCPURL, u.uncached) })
		l.tallies[p][1].add(st, d, false)
		if st != http.StatusOK && (p != phaseDuring || st != http.StatusServiceUnavailable) {
			t.Errorf("uncached MCP request (%s): %d", phaseNames[p], st)
		}
		p, d = l.timed(func() { st = mcp(l.s.MCPURL, u.cached) })
		l.tallies[p][2].add(st, d, false)
		if st != http.StatusOK {
			t.Errorf("cached MCP request (%s): %d, want 200", phaseNames[p], st)
		}
		p, d = l.timed(func() { st = mcp(l.s.MCPURL, "garbage-"+secret.NewToken()) })
		l.tallies[p][3].add(st, d, st == http.StatusOK)
		if st != http.StatusUnauthorized && (p != phaseDuring || st != http.StatusServiceUnavailable) {
			t.Errorf("garbage token (%s): %d", phaseNames[p], st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fault runs f (which makes the fault and returns when it is over) under the load, waits
// until a refresh succeeds again (at most 60 s), lets the load run on for a while, stops it
// and reports every phase. It returns how long the token service took to recover after f.
func (l *faultLoad) fault(f func()) time.Duration {
	t := l.t
	time.Sleep(2 * time.Second)
	l.phase.Store(phaseDuring)
	f()
	over := time.Now()
	var recovered time.Duration
	for {
		if ok := l.lastOK.Load(); ok > over.UnixNano() {
			recovered = time.Unix(0, ok).Sub(over)
			break
		}
		if time.Since(over) > 60*time.Second {
			t.Errorf("no refresh succeeded within 60 s of the end of the fault")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	l.phase.Store(phaseAfter)
	time.Sleep(3 * time.Second)
	close(l.stop)
	l.wg.Wait()
	for _, ts := range l.tallies {
		report(t, ts[:]...)
	}
	for p, ts := range l.tallies {
		for _, x := range ts {
			if x.wrong > 0 {
				t.Errorf("%s: %d wrongly allowed", x.name, x.wrong)
			}
			if p != phaseDuring && x.sent == 0 {
				t.Errorf("%s: no request sent", x.name)
			}
		}
	}
	t.Logf("RELIABILITY %s: the first refresh succeeded %v after the fault ended", t.Name(), recovered.Round(time.Millisecond))
	return recovered
}

// TestPostgresRestart restarts and crashes a real PostgreSQL server under load: a server of
// the test's own (pgServer: the shared one must never be restarted), started with initdb and
// pg_ctl, holding the token service's store. Three faults, each under the load of faultLoad:
// `pg_ctl restart -m fast` (what pg_ctlcluster … restart does), a crash (`pg_ctl stop -m
// immediate`: no shutdown checkpoint, the server recovers from its WAL on start) with the
// server down 5 s, and every connection of the token service's pool terminated
// (pg_terminate_backend) every 250 ms for 5 s. After each, sessions, grants and live refresh
// tokens are the same as before (nothing lost), every refresh token works. It runs under
// make reliability only; without initdb and pg_ctl it skips.
//
// The reuse interval is the default 5 s, shorter than the crash's outage: a rotation whose
// COMMIT reached the server's WAL just as it died has no answer (the connection is gone),
// the client gets 503 and keeps the old refresh token, and its retry after the server is back
// is granted because the token service remembers the rotation it could not answer.
func TestPostgresRestart(t *testing.T) {
	if !full() {
		t.Skip("the PostgreSQL restart runs under make reliability (GATEWAY_RELIABILITY=full)")
	}
	pg := startPGServer(t)
	// The cached decisions must outlive the fault and the wait for recovery.
	s := startStack(t, stackOptions{Storage: fmt.Sprintf("{type: postgres, dsn: %q}", withAppName(pg.DSN, "reliability-tokensvc")),
		CheckCacheTTL: 2 * time.Minute})
	users := signInUsers(t, s, 16)
	before := countRecords(t, pg.DSN)
	t.Logf("RELIABILITY %s: before the faults: %s", t.Name(), before)
	for _, fault := range []struct {
		name string
		do   func(t *testing.T)
	}{
		{"pg_ctl restart -m fast", func(t *testing.T) {
			t.Logf("RELIABILITY %s: pg_ctl restart took %v", t.Name(), pg.ctl(t, "-m", "fast", "restart").Round(time.Millisecond))
		}},
		{"crash (stop -m immediate), down 5s, start", func(t *testing.T) {
			pg.ctl(t, "-m", "immediate", "stop")
			time.Sleep(5 * time.Second)
			t.Logf("RELIABILITY %s: pg_ctl start (crash recovery) took %v", t.Name(), pg.ctl(t, "start").Round(time.Millisecond))
		}},
		{"connections terminated every 250ms for 5s", func(t *testing.T) {
			n := terminateFor(t, pg.DSN, "reliability-tokensvc", 5*time.Second)
			t.Logf("RELIABILITY %s: %d connections terminated", t.Name(), n)
		}},
	} {
		t.Run(fault.name, func(t *testing.T) {
			for _, u := range users {
				u.prime(t, s)
			}
			l := startFaultLoad(t, s, users, fault.name)
			l.fault(func() { fault.do(t) })
			got := countRecords(t, pg.DSN)
			t.Logf("RELIABILITY %s: after: %s", t.Name(), got)
			if got != before {
				t.Errorf("records after the fault: %s, want %s", got, before)
			}
		})
	}
}

// TestPostgresDroppedPool terminates every connection of the token service's pool
// (pg_terminate_backend of the connections with its application_name) every 250 ms for 5 s
// under the load of faultLoad, on the shared test database: only the token service's own
// connections are touched. Nothing is lost and everything works afterwards.
func TestPostgresDroppedPool(t *testing.T) {
	direct := pgtest.DSN(t)
	app := "reliability-" + secret.NewToken()[:12]
	s := startStack(t, stackOptions{Storage: fmt.Sprintf("{type: postgres, dsn: %q}", withAppName(direct, app)), CheckCacheTTL: 2 * time.Minute})
	users := signInUsers(t, s, scale(4, 16))
	before := countRecords(t, direct)
	l := startFaultLoad(t, s, users, "pool dropped")
	l.fault(func() {
		n := terminateFor(t, direct, app, 5*time.Second)
		t.Logf("RELIABILITY %s: %d connections terminated", t.Name(), n)
		if n == 0 {
			t.Errorf("no connection of the token service was terminated")
		}
	})
	got := countRecords(t, direct)
	t.Logf("RELIABILITY %s: before: %s; after: %s", t.Name(), before, got)
	if got != before {
		t.Errorf("records after the fault: %s, want %s", got, before)
	}
}

// withAppName sets application_name on a postgres:// DSN, which names the connections in
// pg_stat_activity.
func withAppName(dsn, name string) string {
	u, _ := url.Parse(dsn)
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// terminateFor terminates every connection named app every 250 ms for d and returns how many
// it terminated.
func terminateFor(t *testing.T, dsn, app string, d time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("terminate: %v", err)
	}
	defer conn.Close(context.Background())
	total := 0
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n); err != nil {
			t.Fatalf("terminate: %v", err)
		}
		total += n
	}
	return total
}
