package reliability

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpmesh/gateway/tokensvc/secret"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// seedTokens stores n live External Tokens of n users straight into the store (a test-only
// seeding tool: the real flow is exercised elsewhere) and returns them.
func seedTokens(t *testing.T, st store.Store, n int) []string {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	toks := make([]string, n)
	for i := range n {
		sess := store.Session{ID: secret.NewToken(), Subject: "user-" + secret.NewToken()[:8], Email: "u@example.com",
			Claims: []byte(`{"sub":"u"}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := st.CreateSession(ctx, sess); err != nil {
			t.Fatal(err)
		}
		toks[i] = secret.NewToken()
		if err := st.CreateAccessToken(ctx, store.AccessToken{Hash: secret.Hash(toks[i]), ClientID: "seed", SessionID: sess.ID,
			Subject: sess.Subject, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	return toks
}

// TestFilterMemoryIsBounded sends waves of distinct live tokens through filter.wasm (each
// one a check call and a cached bundle) and reads each VM's linear memory after every wave.
// The decision cache is bounded (entries and bytes), so once it is full the memory stops
// growing: the last wave adds (almost) nothing. Wasm memory never shrinks, so the figure is
// the high-water mark.
//
// It takes a minute and more, so it runs under make reliability only.
func TestFilterMemoryIsBounded(t *testing.T) {
	if !full() {
		t.Skip("the memory waves run under make reliability (GATEWAY_RELIABILITY=full)")
	}
	s := startStack(t, stackOptions{Storage: "{type: memory}", Quiet: true})
	waves, perWave := 8, 6000
	workers := s.Gateway.Host().Workers()
	mem := func() []uint32 {
		out := make([]uint32, workers)
		for i := range out {
			out[i] = s.Gateway.Host().MemoryBytes(i)
		}
		return out
	}
	start := mem()
	t.Logf("RELIABILITY %s: linear memory per VM at the start: %v bytes", t.Name(), start)
	var after [][]uint32
	for w := range waves {
		toks := seedTokens(t, s.Server.Store(), perWave)
		tl := newTally("wave of distinct live tokens")
		var wg sync.WaitGroup
		next := make(chan string)
		for range 8 {
			wg.Go(func() {
				for tok := range next {
					t0 := time.Now()
					st := mcp(s.MCPURL, tok)
					tl.add(st, time.Since(t0), false)
					if st != http.StatusOK {
						t.Errorf("live token: %d", st)
					}
				}
			})
		}
		for _, tok := range toks {
			next <- tok
		}
		close(next)
		wg.Wait()
		m := mem()
		after = append(after, m)
		report(t, tl)
		t.Logf("RELIABILITY %s: linear memory per VM after wave %d (%d distinct tokens so far): %v bytes", t.Name(), w+1, (w+1)*perWave, m)
	}
	for i := range workers {
		grew := int64(after[waves-1][i]) - int64(after[waves-2][i])
		if grew > int64(after[waves-2][i])/20 {
			t.Errorf("VM %d grew by %d bytes in the last wave (to %d): not bounded", i, grew, after[waves-1][i])
		}
	}
}
