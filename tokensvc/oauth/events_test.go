package oauth

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// recorder is an Events that records the document fetch outcomes.
type recorder struct {
	noEvents
	mu      sync.Mutex
	fetches []string
}

func (r *recorder) MetadataDocumentFetch(outcome string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fetches = append(r.fetches, outcome)
}

func TestEvents_MetadataDocumentFetchOutcomes(t *testing.T) {
	t.Parallel()
	d := newDocServer(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cases := []struct {
		name   string
		public bool // the default client, which refuses loopback
		path   string
		want   []string
	}{
		{"fetched, then cached (no second fetch)", false, "/client.json", []string{DocumentFetched}},
		{"not found", false, "/missing.json", []string{DocumentInvalid, DocumentInvalid}},
		{"wrong media type", false, "/html.json", []string{DocumentInvalid, DocumentInvalid}},
		{"client_id mismatch", false, "/mismatch.json", []string{DocumentInvalid, DocumentInvalid}},
		{"non-public address", true, "/client.json", []string{DocumentForbidden, DocumentForbidden}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := loopbackDocClient(d, 2*time.Second)
			if tc.public {
				client = NewDocumentClient(DocumentClientOptions{Timeout: 2 * time.Second})
			}
			rec := &recorder{}
			r := newDocumentResolver(client, time.Now, log, 10)
			r.events = rec
			for range 2 {
				_, _ = r.resolve(context.Background(), d.base()+tc.path)
			}
			if len(rec.fetches) != len(tc.want) {
				t.Fatalf("outcomes %v, want %v", rec.fetches, tc.want)
			}
			for i := range tc.want {
				if rec.fetches[i] != tc.want[i] {
					t.Errorf("outcomes %v, want %v", rec.fetches, tc.want)
				}
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		gone := newDocServer(t)
		id := gone.base() + "/client.json"
		gone.Close()
		rec := &recorder{}
		r := newDocumentResolver(loopbackDocClient(gone, 2*time.Second), time.Now, log, 10)
		r.events = rec
		if _, err := r.resolve(context.Background(), id); err == nil {
			t.Fatal("a closed server served a document")
		}
		if len(rec.fetches) != 1 || rec.fetches[0] != DocumentUnreachable {
			t.Errorf("outcomes %v, want [%s]", rec.fetches, DocumentUnreachable)
		}
	})
}
