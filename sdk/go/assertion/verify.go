package assertion

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"time"
)

// HeaderName is the HTTP header that carries the assertion.
const HeaderName = "X-Gateway-Assertion"

// MaxAssertionSize bounds the length of an assertion in bytes.
const MaxAssertionSize = 8 << 10

// DefaultLeeway is the clock skew allowed on exp, iat and nbf.
const DefaultLeeway = 30 * time.Second

// Reason says why an assertion was refused.
type Reason string

// The reasons of a refusal. The shared test vectors (sdk/testdata/vectors.json) name them.
const (
	ReasonMissing         Reason = "missing"       // no assertion, or more than one header
	ReasonOversized       Reason = "oversized"     // longer than MaxAssertionSize
	ReasonMalformed       Reason = "malformed"     // not three base64url segments of JSON
	ReasonHeader          Reason = "header"        // duplicated member, no kid, crit, wrong typ
	ReasonAlgorithm       Reason = "alg"           // alg is not ES256
	ReasonUnknownKey      Reason = "unknown_kid"   // kid not in the JWKS, even after a refresh
	ReasonSignature       Reason = "signature"     // the signature does not verify
	ReasonIssuer          Reason = "issuer"        // iss is not the configured issuer
	ReasonAudience        Reason = "audience"      // aud is not the configured audience
	ReasonExpired         Reason = "expired"       // exp is past (or missing)
	ReasonNotYetValid     Reason = "not_yet_valid" // iat or nbf is in the future (iat missing)
	ReasonClaims          Reason = "claims"        // sub, email, name or groups of the wrong type
	ReasonJWKSUnavailable Reason = "jwks"          // the JWKS cannot be fetched or parsed
)

// Error is a refusal.
type Error struct {
	Reason Reason
	Detail string
	Err    error
}

func (e *Error) Error() string {
	s := "assertion: " + string(e.Reason) + ": " + e.Detail
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of err, or "" if err is not an *Error.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

func refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Identity is the verified content of an assertion.
type Identity struct {
	Subject   string
	Email     string
	Name      string
	Groups    []string
	Issuer    string
	Audience  string
	IssuedAt  time.Time
	ExpiresAt time.Time
	// Claims holds every claim of the payload, the ones above included.
	Claims map[string]any
}

// Config configures a Verifier.
type Config struct {
	// JWKSURL is the gateway's key set, e.g. https://mcp.example.com/.well-known/gateway/jwks.json.
	JWKSURL string
	// Issuer is the expected iss (the gateway's authenticate_service_url). Required unless
	// AnyIssuer is set.
	Issuer string
	// AnyIssuer accepts any non-empty iss. Only for tools that inspect assertions.
	AnyIssuer bool
	// Audience is the expected aud: the host (host[:port]) the application is reached at
	// through the gateway.
	Audience string
	// Leeway is the clock skew allowed (default DefaultLeeway; negative means none).
	Leeway time.Duration
	// HTTPClient fetches the JWKS (default: a client with a 10 s timeout).
	HTTPClient *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Verifier verifies assertions. It is safe for concurrent use.
type Verifier struct {
	cfg  Config
	keys *keyCache
}

// NewVerifier returns a Verifier for cfg. It does not fetch the JWKS yet.
func NewVerifier(cfg Config) (*Verifier, error) {
	if cfg.JWKSURL == "" {
		return nil, errors.New("assertion: JWKSURL is required")
	}
	if cfg.Audience == "" {
		return nil, errors.New("assertion: Audience is required")
	}
	if cfg.Issuer == "" && !cfg.AnyIssuer {
		return nil, errors.New("assertion: Issuer is required")
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = DefaultLeeway
	} else if cfg.Leeway < 0 {
		cfg.Leeway = 0
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Verifier{cfg: cfg, keys: newKeyCache(cfg.JWKSURL, cfg.HTTPClient, cfg.Now)}, nil
}

// Verify checks token and returns the identity it asserts.
func (v *Verifier) Verify(ctx context.Context, token string) (*Identity, error) {
	if token == "" {
		return nil, refuse(ReasonMissing, "no assertion")
	}
	if len(token) > MaxAssertionSize {
		return nil, refuse(ReasonOversized, "%d bytes, more than %d", len(token), MaxAssertionSize)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, refuse(ReasonMalformed, "not a compact JWS (%d segments)", len(parts))
	}
	var hdr struct {
		Alg  *string `json:"alg"`
		Kid  *string `json:"kid"`
		Typ  *string `json:"typ"`
		Crit any     `json:"crit"`
	}
	if err := decodeSegment(parts[0], ReasonHeader, &hdr); err != nil {
		return nil, err
	}
	if hdr.Alg == nil || *hdr.Alg != "ES256" {
		alg := "missing"
		if hdr.Alg != nil {
			alg = fmt.Sprintf("%q", *hdr.Alg)
		}
		return nil, refuse(ReasonAlgorithm, "alg %s, only ES256 is accepted", alg)
	}
	if hdr.Kid == nil || *hdr.Kid == "" {
		return nil, refuse(ReasonHeader, "no kid")
	}
	if hdr.Crit != nil {
		return nil, refuse(ReasonHeader, "crit is not supported")
	}
	if hdr.Typ != nil && !strings.EqualFold(*hdr.Typ, "JWT") {
		return nil, refuse(ReasonHeader, "typ %q", *hdr.Typ)
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(parts[2])
	if err != nil {
		return nil, &Error{Reason: ReasonMalformed, Detail: "signature is not base64url", Err: err}
	}
	key, err := v.keys.key(ctx, *hdr.Kid)
	if err != nil {
		return nil, err
	}
	if !verifyES256(key, parts[0]+"."+parts[1], sig) {
		return nil, refuse(ReasonSignature, "the signature does not verify with key %q", *hdr.Kid)
	}
	var claims map[string]any
	if err := decodeSegment(parts[1], ReasonMalformed, &claims); err != nil {
		return nil, err
	}
	return v.checkClaims(claims)
}

// VerifyRequest verifies the one X-Gateway-Assertion header of r (a value with a comma is
// several headers joined by a proxy).
func (v *Verifier) VerifyRequest(r *http.Request) (*Identity, error) {
	var values []string
	for _, hv := range r.Header.Values(HeaderName) {
		for part := range strings.SplitSeq(hv, ",") {
			values = append(values, strings.TrimSpace(part))
		}
	}
	switch {
	case len(values) == 0:
		return nil, refuse(ReasonMissing, "no %s header", HeaderName)
	case len(values) > 1:
		return nil, refuse(ReasonMissing, "%d %s headers, want one", len(values), HeaderName)
	}
	return v.Verify(r.Context(), values[0])
}

func verifyES256(key *ecdsa.PublicKey, signingInput string, sig []byte) bool {
	if len(sig) != 64 {
		return false
	}
	h := sha256.Sum256([]byte(signingInput))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	return ecdsa.Verify(key, h[:], r, s)
}

// decodeSegment decodes a base64url JSON object (canonical base64url: unpadded, unused bits
// zero), refusing a member that appears twice at any depth with reason dup.
func decodeSegment(seg string, dup Reason, out any) error {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(seg)
	if err != nil {
		return &Error{Reason: ReasonMalformed, Detail: "segment is not base64url", Err: err}
	}
	if err := checkNoDuplicates(raw, dup); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return &Error{Reason: ReasonMalformed, Detail: "segment is not a JSON object", Err: err}
	}
	if dec.More() {
		return refuse(ReasonMalformed, "trailing data after the JSON object")
	}
	return nil
}

// checkNoDuplicates refuses, with reason dup, a JSON document whose objects repeat a member
// name.
func checkNoDuplicates(raw []byte, dup Reason) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	first, err := dec.Token()
	if err != nil {
		return &Error{Reason: ReasonMalformed, Detail: "segment is not JSON", Err: err}
	}
	if d, ok := first.(json.Delim); !ok || d != '{' {
		return refuse(ReasonMalformed, "segment is not a JSON object")
	}
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next token of an object is a member name
	}
	stack := []frame{{object: true, seen: map[string]bool{}, key: true}}
	for len(stack) > 0 {
		tok, err := dec.Token()
		if err != nil {
			return &Error{Reason: ReasonMalformed, Detail: "segment is not JSON", Err: err}
		}
		top := &stack[len(stack)-1]
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].key = true
			}
			continue
		}
		if top.object && top.key {
			name, _ := tok.(string)
			if top.seen[name] {
				return refuse(dup, "member %q appears twice", name)
			}
			top.seen[name] = true
			top.key = false
			continue
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, frame{object: d == '{', seen: map[string]bool{}, key: d == '{'})
			continue
		}
		if top.object {
			top.key = true
		}
	}
	return nil
}

func (v *Verifier) checkClaims(c map[string]any) (*Identity, error) {
	now := v.cfg.Now()
	leeway := v.cfg.Leeway
	id := &Identity{Claims: c}
	var ok bool
	if id.Issuer, ok = c["iss"].(string); !ok || id.Issuer == "" || (!v.cfg.AnyIssuer && id.Issuer != v.cfg.Issuer) {
		return nil, refuse(ReasonIssuer, "iss %v, want %q", c["iss"], v.cfg.Issuer)
	}
	switch aud := c["aud"].(type) {
	case string:
		ok = aud == v.cfg.Audience
	case []any:
		ok = false
		for _, a := range aud {
			if a == v.cfg.Audience {
				ok = true
			}
		}
	default:
		ok = false
	}
	if !ok {
		return nil, refuse(ReasonAudience, "aud %v, want %q", c["aud"], v.cfg.Audience)
	}
	id.Audience = v.cfg.Audience
	exp, ok := numericDate(c["exp"])
	if !ok {
		return nil, refuse(ReasonExpired, "no exp")
	}
	if !now.Before(exp.Add(leeway)) {
		return nil, refuse(ReasonExpired, "expired at %s", exp.UTC().Format(time.RFC3339))
	}
	iat, ok := numericDate(c["iat"])
	if !ok {
		return nil, refuse(ReasonNotYetValid, "no iat")
	}
	if iat.After(now.Add(leeway)) {
		return nil, refuse(ReasonNotYetValid, "issued in the future (%s)", iat.UTC().Format(time.RFC3339))
	}
	if raw, present := c["nbf"]; present {
		nbf, ok := numericDate(raw)
		if !ok {
			return nil, refuse(ReasonNotYetValid, "nbf is not a number")
		}
		if nbf.After(now.Add(leeway)) {
			return nil, refuse(ReasonNotYetValid, "not valid before %s", nbf.UTC().Format(time.RFC3339))
		}
	}
	id.IssuedAt, id.ExpiresAt = iat, exp
	if id.Subject, ok = c["sub"].(string); !ok || id.Subject == "" {
		return nil, refuse(ReasonClaims, "sub is missing or not a string")
	}
	for name, dst := range map[string]*string{"email": &id.Email, "name": &id.Name} {
		if raw, present := c[name]; present {
			if *dst, ok = raw.(string); !ok {
				return nil, refuse(ReasonClaims, "%s is not a string", name)
			}
		}
	}
	if raw, present := c["groups"]; present && raw != nil {
		list, ok := raw.([]any)
		if !ok {
			return nil, refuse(ReasonClaims, "groups is not a list")
		}
		id.Groups = make([]string, 0, len(list))
		for _, g := range list {
			s, ok := g.(string)
			if !ok {
				return nil, refuse(ReasonClaims, "groups holds a %T", g)
			}
			id.Groups = append(id.Groups, s)
		}
	}
	if id.Groups == nil {
		id.Groups = []string{}
	}
	return id, nil
}

// numericDate reads a JSON number (json.Number) as seconds since the epoch.
func numericDate(v any) (time.Time, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > 1<<40 {
		return time.Time{}, false
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true
}
