package config

import (
	"strings"
	"testing"
	"time"
)

func TestParse_RefreshTokenReuseInterval(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, value string
		want        time.Duration
		problem     string
	}{
		{"default", "", DefaultRefreshTokenReuseInterval, ""},
		{"off", "0s", 0, ""},
		{"maximum", "1m", time.Minute, ""},
		{"custom", "2500ms", 2500 * time.Millisecond, ""},
		{"too long", "61s", 0, "token_service.refresh_token_reuse_interval: must be at most 1m0s"},
		{"negative", "-1s", 0, "token_service.refresh_token_reuse_interval: must not be negative"},
		{"bare number", "5", 0, "token_service.refresh_token_reuse_interval: want a duration"},
		{"garbage", "soon", 0, "token_service.refresh_token_reuse_interval: want a duration"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			y := validBase
			if tc.value != "" {
				y += "token_service: {refresh_token_reuse_interval: " + tc.value + "}\n"
			}
			c, err := Parse([]byte(y), noEnv)
			if tc.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("error %v, want one containing %q", err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.TokenService.ReuseInterval(); got != tc.want {
				t.Fatalf("ReuseInterval() = %v, want %v", got, tc.want)
			}
		})
	}
}
