package domains

import (
	"net/netip"
	"strings"
)

// ValidDNSName reports whether host is a syntactically valid DNS name
// (letters, digits, hyphens; non-empty labels of at most 63 bytes) and not
// an IP literal.
func ValidDNSName(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	allDigits := true
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-':
				allDigits = false
			case c >= '0' && c <= '9':
			default:
				return false
			}
		}
	}
	return !allDigits // 127.1 and similar are IPs to some resolvers
}

// DomainAllowed reports whether host matches one of patterns
// (mcp_allowed_client_id_domains, mcp_allowed_upstream_domains). "*.example.com" matches any proper
// subdomain of example.com, at any depth, but not example.com itself nor
// names that merely end in "example.com"; a pattern without "*." matches
// exactly. Matching is case-insensitive and ignores a trailing dot. IP
// literals never match.
func DomainAllowed(patterns []string, host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !ValidDNSName(host) {
		return false
	}
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(p), "."))
		if rest, ok := strings.CutPrefix(p, "*."); ok {
			if rest == "" || strings.Contains(rest, "*") {
				continue
			}
			if strings.HasSuffix(host, "."+rest) && len(host) > len(rest)+1 {
				return true
			}
			continue
		}
		if p != "" && host == p {
			return true
		}
	}
	return false
}

// LoopbackLiteralListed reports whether host is a loopback IP literal (127.0.0.0/8, ::1)
// written verbatim in patterns. Domain patterns never match IP literals; this lets a
// development configuration name an upstream on loopback, which the token service reaches
// only under its explicit insecure loopback setting (docs/upstream-discovery.md).
func LoopbackLiteralListed(patterns []string, host string) bool {
	a, err := netip.ParseAddr(strings.Trim(host, "[]"))
	if err != nil || !a.Unmap().IsLoopback() || a.Zone() != "" {
		return false
	}
	for _, p := range patterns {
		if q, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(p), "[]")); err == nil && q == a {
			return true
		}
	}
	return false
}
