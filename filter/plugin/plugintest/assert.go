package plugintest

import (
	"strings"
	"testing"
)

// Check reports every way r falls short of s.Want.
func Check(t testing.TB, s Scenario, r Result) {
	t.Helper()
	w := s.Want
	if r.Stuck {
		t.Fatalf("stream stuck: paused and never continued or answered")
	}
	if r.LateHeaderWrites > 0 {
		t.Errorf("%d request-header changes after the headers went upstream", r.LateHeaderWrites)
	}
	if w.Status == 0 {
		if !r.Forwarded || r.Status != 0 {
			t.Errorf("request not forwarded: status %d body %s", r.Status, r.Body)
		}
	} else if r.Status != w.Status {
		t.Errorf("status = %d (forwarded %v), want %d; body %s", r.Status, r.Forwarded, w.Status, r.Body)
	}
	for _, sub := range w.BodyContains {
		if !strings.Contains(r.Body, sub) {
			t.Errorf("reply body %s\ndoes not contain %s", r.Body, sub)
		}
	}
	for k, v := range w.ReplyHeaders {
		if got := r.ReplyHeaders[k]; got != v {
			t.Errorf("reply header %s = %q, want %q", k, got, v)
		}
	}
	for k, v := range w.Upstream {
		got, ok := r.Upstream[k]
		if v == "" && ok {
			t.Errorf("upstream received %s: %q; it must not", k, got)
		}
		if v != "" && got != v {
			t.Errorf("upstream header %s = %q, want %q", k, got, v)
		}
	}
	logs := strings.Join(r.Logs, "\n")
	for _, sub := range w.LogContains {
		if !strings.Contains(logs, sub) {
			t.Errorf("log does not contain %s; log:\n%s", sub, logs)
		}
	}
	for _, sub := range w.LogNotContains {
		if strings.Contains(logs, sub) {
			t.Errorf("log contains %s; it must not", sub)
		}
	}
	if w.CheckCalls >= 0 && r.CheckCalls != w.CheckCalls {
		t.Errorf("check calls = %d, want %d", r.CheckCalls, w.CheckCalls)
	}
}
