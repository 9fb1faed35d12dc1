package reliability

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// tally counts the answers of one phase of a fault.
type tally struct {
	mu       sync.Mutex
	name     string
	sent     int
	statuses map[int]int
	// wrong counts answers that let a request through that must not pass.
	wrong int
	lat   []time.Duration
}

func newTally(name string) *tally { return &tally{name: name, statuses: map[int]int{}} }

func (t *tally) add(status int, d time.Duration, wronglyAllowed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent++
	t.statuses[status]++
	if wronglyAllowed {
		t.wrong++
	}
	t.lat = append(t.lat, d)
}

func (t *tally) count(status int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.statuses[status]
}

// percentile returns the p-th percentile (0..100) of the latencies.
func (t *tally) percentile(p float64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lat) == 0 {
		return 0
	}
	l := append([]time.Duration(nil), t.lat...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	i := int(float64(len(l)-1) * p / 100)
	return l[i]
}

// String is the line RELIABILITY.md quotes: sent, allowed (200), denied (403), 401, 503,
// other, wrongly allowed, p50/p99.
func (t *tally) String() string {
	t.mu.Lock()
	other := 0
	var others []string
	for s, n := range t.statuses {
		switch s {
		case 200, 401, 403, 503:
		default:
			other += n
			others = append(others, fmt.Sprintf("%d×%d", n, s))
		}
	}
	sort.Strings(others)
	line := fmt.Sprintf("%-58s sent %5d  200 %5d  403 %4d  401 %4d  503 %5d  other %4d %s wrongly-allowed %d",
		t.name, t.sent, t.statuses[200], t.statuses[403], t.statuses[401], t.statuses[503], other, strings.Join(others, ","), t.wrong)
	t.mu.Unlock()
	return line + fmt.Sprintf("  p50 %v p99 %v", t.percentile(50).Round(time.Microsecond), t.percentile(99).Round(time.Microsecond))
}

// report logs the tallies as one block, prefixed so that RELIABILITY.md can be filled from
// `go test -v` output (grep RELIABILITY).
func report(t *testing.T, ts ...*tally) {
	t.Helper()
	for _, x := range ts {
		t.Logf("RELIABILITY %s: %s", t.Name(), x)
	}
}

// records counts what must survive every fault: live sessions, live grants and live refresh
// tokens (unrotated, of a live grant).
type records struct{ Sessions, Grants, RefreshTokens int }

func (r records) String() string {
	return fmt.Sprintf("sessions %d, grants %d, live refresh tokens %d", r.Sessions, r.Grants, r.RefreshTokens)
}

// countRecords reads the counts from PostgreSQL at dsn (the test's schema, directly).
func countRecords(t *testing.T, dsn string) records {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("count records: %v", err)
	}
	defer conn.Close(ctx)
	var r records
	err = conn.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM sessions WHERE revoked_at IS NULL),
		(SELECT count(*) FROM grants WHERE revoked_at IS NULL),
		(SELECT count(*) FROM refresh_tokens r JOIN grants g ON g.id = r.grant_id
		 WHERE r.used_at IS NULL AND g.revoked_at IS NULL)`).Scan(&r.Sessions, &r.Grants, &r.RefreshTokens)
	if err != nil {
		t.Fatalf("count records: %v", err)
	}
	return r
}

// pgTarget returns the host:port of a postgres:// DSN.
func pgTarget(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Fatalf("GATEWAY_TEST_POSTGRES_DSN must be a postgres:// URL with host:port for the outage tests")
	}
	if u.Port() == "" {
		return u.Host + ":5432"
	}
	return u.Host
}

// withHost returns dsn with its host:port replaced by addr.
func withHost(dsn, addr string) string {
	u, _ := url.Parse(dsn)
	u.Host = addr
	return u.String()
}
