package oauth

import (
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

func TestCallerAddress(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, remote string
		xff          []string
		hops         int
		want         string
	}{
		{"peer IPv4", "203.0.113.7:4711", nil, 0, "203.0.113.7"},
		{"peer IPv6 is its /64", "[2001:db8:1:2:3:4:5:6]:4711", nil, 0, "2001:db8:1:2::/64"},
		{"peer IPv4-mapped IPv6", "[::ffff:203.0.113.7]:4711", nil, 0, "203.0.113.7"},
		{"peer with zone", "[fe80::1%eth0]:4711", nil, 0, "fe80::/64"},
		{"header ignored without trusted hops", "10.0.0.2:80", []string{"198.51.100.1"}, 0, "10.0.0.2"},
		{"one hop: the last entry", "10.0.0.2:80", []string{"6.6.6.6, 198.51.100.1"}, 1, "198.51.100.1"},
		{"one hop: across repeated headers", "10.0.0.2:80", []string{"6.6.6.6", "198.51.100.1"}, 1, "198.51.100.1"},
		{"two hops", "10.0.0.3:80", []string{"6.6.6.6, 198.51.100.1, 10.0.0.2"}, 2, "198.51.100.1"},
		{"entry with port", "10.0.0.2:80", []string{"198.51.100.1:5000"}, 1, "198.51.100.1"},
		{"IPv6 entry", "10.0.0.2:80", []string{"[2001:db8::1]:5000"}, 1, "2001:db8::/64"},
		{"too few entries: the peer", "10.0.0.3:80", []string{"198.51.100.1"}, 2, "10.0.0.3"},
		{"no header: the peer", "10.0.0.2:80", nil, 1, "10.0.0.2"},
		{"garbage entry: the peer", "10.0.0.2:80", []string{"198.51.100.1, unknown"}, 1, "10.0.0.2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "https://mcp.example.com/", nil)
			r.RemoteAddr = tc.remote
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := callerAddress(r, tc.hops); got != tc.want {
				t.Errorf("callerAddress = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRegistrationLimiter(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	t.Run("caller budget refills with the clock", func(t *testing.T) {
		l := newRegistrationLimiter(100, 100, 1, 2, 10)
		for i, want := range []bool{true, true, false} {
			if ok, _ := l.allow("h", "a", t0); ok != want {
				t.Fatalf("attempt %d: %v", i, ok)
			}
		}
		if ok, wait := l.allow("h", "a", t0); ok || wait != time.Second {
			t.Fatalf("refused attempt: ok %v, wait %v, want 1s", ok, wait)
		}
		if ok, _ := l.allow("h", "a", t0.Add(time.Second)); !ok {
			t.Fatal("after a second")
		}
	})
	t.Run("host budget is shared, and a refusal there spends no caller budget", func(t *testing.T) {
		l := newRegistrationLimiter(1, 2, 1, 2, 10)
		for i, c := range []string{"a", "b"} {
			if ok, _ := l.allow("h", c, t0); !ok {
				t.Fatalf("caller %d", i)
			}
		}
		if ok, _ := l.allow("h", "c", t0); ok {
			t.Fatal("host budget exceeded")
		}
		if ok, _ := l.allow("other", "a", t0); !ok {
			t.Fatal("another host has its own budget")
		}
		// c was refused by the host, not by its own budget: it has 2 left.
		if ok, _ := l.allow("h", "c", t0.Add(2*time.Second)); !ok {
			t.Fatal("c after the host refilled")
		}
		if ok, _ := l.allow("h", "c", t0.Add(2*time.Second)); !ok {
			t.Fatal("c's second registration")
		}
	})
	t.Run("tracked callers are bounded, least recently seen forgotten", func(t *testing.T) {
		l := newRegistrationLimiter(1e6, 1e6, 0.001, 1, 100)
		for i := range 1000 {
			l.allow("h", "caller-"+strconv.Itoa(i), t0)
		}
		if n := l.tracked(); n != 100 {
			t.Fatalf("%d callers tracked, want 100", n)
		}
		if ok, _ := l.allow("h", "caller-999", t0); ok {
			t.Fatal("a recent caller was forgotten")
		}
		if ok, _ := l.allow("h", "caller-0", t0); !ok {
			t.Fatal("the oldest caller was not forgotten")
		}
	})
}
