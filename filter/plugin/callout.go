package plugin

import (
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/shared/jsontext"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/shared/policy"
)

// maxCheckResponse bounds the check API answer the filter reads.
const maxCheckResponse = 64 << 10

// callTokenService dispatches the check call for the stream's credential.
func (s *stream) callTokenService(key cacheKey) error {
	cfg := s.f.cfg
	body := checkapi.AppendRequest(make([]byte, 0, 256+len(s.credential)), s.route.ID, s.route.Host,
		s.credKind == credCookie, s.credential, s.requestID())
	headers := []Header{
		{":method", "POST"},
		{":path", paths.Check},
		{":authority", cfg.Authority},
		{"content-type", "application/json"},
		{checkapi.KeyHeader, cfg.FilterKey},
	}
	if id := s.requestID(); id != "" {
		headers = append(headers, Header{"x-request-id", id})
	}
	// The check call joins the request's trace (W3C Trace Context).
	for _, name := range [...]string{"traceparent", "tracestate"} {
		if v, ok := s.header(name); ok {
			headers = append(headers, Header{name, v})
		}
	}
	return s.h.DispatchHTTPCall(cfg.Cluster, headers, body, cfg.CheckTimeoutMillis, func(resp CallResponse) {
		s.onCheckResponse(key, resp)
	})
}

// onCheckResponse turns the token service's answer into a decision, failing closed on
// anything unexpected.
func (s *stream) onCheckResponse(key cacheKey, resp CallResponse) {
	s.endCheckCall()
	if s.finished || s.done {
		return
	}
	status := -1
	for _, h := range resp.Headers {
		if h.Name == ":status" {
			status, _ = strconv.Atoi(h.Value)
			break
		}
	}
	if resp.Failed || status < 0 || len(resp.Body) > maxCheckResponse || jsontext.Validate(resp.Body, jsontext.MaxDepth) != jsontext.Valid {
		s.unavailable("no usable answer from the token service")
		return
	}
	res := jsontext.Parse(string(resp.Body)) // a copy: the bundle outlives the host's buffer
	st := res.Get(checkapi.FieldStatus).String()
	if status != checkapi.HTTPStatus(st) {
		s.unavailable("token service answered " + strconv.Itoa(status) + " " + st)
		return
	}
	switch st {
	case checkapi.StatusOK:
		b, err := s.f.bundleFrom(res, s.h.Now())
		if err != nil {
			s.unavailable(err.Error())
			return
		}
		s.f.cache.put(key, b, s.h.Now())
		s.onBundle(b, true)
	case checkapi.StatusInvalidToken, checkapi.StatusNoSession:
		if st == checkapi.StatusInvalidToken {
			s.rememberRefusal(key)
		}
		s.refuse(metricUnauthenticated, policy.ReasonTokenInvalid)
		if s.credKind == credBearer {
			s.replyUnauthorized("invalid_token", "the access token is invalid, expired or not meant for this server")
		} else {
			s.replySignIn()
		}
	case checkapi.StatusUpstreamRequired:
		s.refuse(metricDenied, policy.ReasonUpstreamAuthorizationRequired)
		s.replyUpstreamRequired()
	}
}

func (s *stream) unavailable(why string) {
	s.refuse(metricUnavailable, policy.ReasonTokenServiceUnavailable)
	s.h.Log(LogError, "mcp-gateway: failing closed: "+why)
	s.replyError(503, "temporarily_unavailable", "the gateway cannot verify credentials right now")
}

var errBadBundle = errors.New("malformed decision bundle")

// bundleFrom reads a decision bundle; it expires at the earliest of the credential's expiry
// and the configured cache TTL. It reads members the way gjson did before jsontext replaced
// it (FuzzBundleFrom_MatchesGJSON compares the two): the first of duplicated members, strings
// from any kind of value as [jsontext.Value.String] converts them.
func (f *Filter) bundleFrom(res jsontext.Value, now time.Time) (*bundle, error) {
	id := res.Get(checkapi.FieldIdentity)
	sub := id.Get(checkapi.FieldSubject).String()
	if id.Kind() != jsontext.Object || sub == "" {
		return nil, errBadBundle
	}
	b := &bundle{
		input: policy.Input{
			Authenticated: true,
			User:          sub,
			Email:         id.Get(checkapi.FieldEmail).String(),
			Name:          id.Get(checkapi.FieldName).String(),
			ClientID:      id.Get(checkapi.FieldClientID).String(),
		},
		assertion:     res.Get(checkapi.FieldAssertion).String(),
		upstreamToken: res.Get(checkapi.FieldUpstreamToken).String(),
		clientToken:   res.Get(checkapi.FieldClientToken).String(),
	}
	if b.assertion == "" {
		return nil, errBadBundle
	}
	if k := res.Get(checkapi.FieldSessionKey); k.Exists() {
		key, err := base64.RawURLEncoding.DecodeString(k.String())
		if k.Kind() != jsontext.String || err != nil || len(key) < 16 {
			return nil, errBadBundle
		}
		b.session = newSessionBinding(key)
	}
	if groups := id.Get(checkapi.FieldGroups).Array(); len(groups) > 0 {
		b.input.Groups = make([]string, len(groups))
		for i, g := range groups {
			b.input.Groups[i] = g.String()
		}
	}
	type claim struct {
		name string
		vals []string
	}
	var cl []claim
	claims := id.Get(checkapi.FieldClaims)
	if claims.Kind() == jsontext.Object {
		for k, v := range claims.Members() {
			vals := make([]string, 0, 1)
			for _, e := range v.Array() {
				vals = append(vals, e.String())
			}
			cl = append(cl, claim{k.String(), vals})
		}
	}
	// The strings are substrings of the whole answer: copied together, the bundle keeps them
	// and not the answer's syntax and members it does not use.
	strs := []*string{&b.input.User, &b.input.Email, &b.input.Name, &b.input.ClientID, &b.assertion, &b.upstreamToken, &b.clientToken}
	for i := range b.input.Groups {
		strs = append(strs, &b.input.Groups[i])
	}
	for i := range cl {
		strs = append(strs, &cl[i].name)
		for j := range cl[i].vals {
			strs = append(strs, &cl[i].vals[j])
		}
	}
	compactStrings(strs)
	if claims.Kind() == jsontext.Object {
		b.input.Claims = make(map[string][]string, len(cl))
		for _, c := range cl {
			b.input.Claims[c.name] = c.vals // the last of duplicated names wins, as before
		}
	}
	b.expires = now.Add(time.Duration(f.cfg.CacheTTLSeconds) * time.Second)
	if exp := res.Get(checkapi.FieldExpiresAt).Int(); exp > 0 {
		t := time.Unix(exp, 0)
		if !now.Before(t) {
			return nil, errBadBundle // already expired: the token service contradicts itself
		}
		if t.Before(b.expires) {
			b.expires = t
		}
	}
	return b, nil
}

// compactStrings copies the strings strs point to into one allocation and points them at
// their copies.
func compactStrings(strs []*string) {
	n := 0
	for _, p := range strs {
		n += len(*p)
	}
	var sb strings.Builder
	sb.Grow(n)
	for _, p := range strs {
		sb.WriteString(*p)
	}
	all := sb.String()
	for _, p := range strs {
		*p, all = all[:len(*p)], all[len(*p):]
	}
}
