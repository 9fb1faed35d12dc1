package config

import "time"

// Bounds of token_service.refresh_token_reuse_interval (docs/configuration.md).
const (
	// DefaultRefreshTokenReuseInterval is the reuse interval when the key is not set.
	DefaultRefreshTokenReuseInterval = 5 * time.Second
	// MaxRefreshTokenReuseInterval bounds the key: a longer interval gives a thief
	// of a rotated refresh token more time to use it without revoking its family.
	MaxRefreshTokenReuseInterval = time.Minute
)

// ReuseInterval returns token_service.refresh_token_reuse_interval, or its default when
// the key is not set. Zero means the interval is off: any reuse revokes the family.
func (ts *TokenService) ReuseInterval() time.Duration {
	if ts.RefreshTokenReuseInterval == nil {
		return DefaultRefreshTokenReuseInterval
	}
	return ts.RefreshTokenReuseInterval.D()
}

// validateReuseInterval checks token_service.refresh_token_reuse_interval.
func (c *Config) validateReuseInterval(e *Error) {
	d := c.TokenService.ReuseInterval()
	if d > MaxRefreshTokenReuseInterval {
		e.add("token_service.refresh_token_reuse_interval", "must be at most %s (0s turns it off), got %s", MaxRefreshTokenReuseInterval, d)
	}
}
