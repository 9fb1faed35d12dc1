// Registration of the gateway as a client of a discovered authorization server, in the order
// of the MCP specification: the operator's pre-registered client (upstream_discovery
// client_id), else a client ID metadata document the gateway serves on the route's host
// (paths.UpstreamClientMetadata) when the server supports them, else RFC 7591 dynamic
// registration, stored per (issuer, redirect URI) in store.UpstreamClients and reused by
// every user and replica.

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpmesh/gateway/shared/config"
	"github.com/mcpmesh/gateway/shared/paths"
	"github.com/mcpmesh/gateway/tokensvc/store"
)

// Registration kinds (logged, shown on no page).
const (
	RegistrationConfigured = "pre-registered"
	RegistrationDocument   = "client-id-metadata-document"
	RegistrationDynamic    = "dynamic"
)

// registration is the client the gateway is at an upstream authorization server.
type registration struct {
	Kind     string `json:"-"`
	ClientID string `json:"client_id"`
	Secret   string `json:"client_secret,omitempty"`
	// AuthMethod is the token endpoint authentication method agreed at registration;
	// "" tries both (as auth_style unset does).
	AuthMethod string `json:"auth_method,omitempty"`
	// createdAt names the stored registration (store.UpstreamClients.DeleteUpstreamClient).
	createdAt time.Time
}

// style is how the registration authenticates at the token endpoint.
func (r registration) style() authStyle {
	switch r.AuthMethod {
	case "client_secret_basic":
		return styleHeader
	case "client_secret_post", "none":
		return styleParams
	}
	return styleAuto
}

// ClientMetadataDocument is the client ID metadata document the gateway serves on a route
// host with upstream_discovery routes: its URL is its client_id, its redirect URI the host's
// upstream callback.
func ClientMetadataDocument(origin string) map[string]any {
	return map[string]any{
		"client_id":                  origin + paths.UpstreamClientMetadata,
		"client_name":                "MCP gateway",
		"client_uri":                 origin + "/",
		"redirect_uris":              []string{origin + paths.UpstreamCallback},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	}
}

// ClientMetadata serves GET paths.UpstreamClientMetadata on hosts with upstream_discovery
// routes (404 elsewhere).
func (s *Service) ClientMetadata(w http.ResponseWriter, r *http.Request) {
	origin, ok := s.discoveryOrigin(r)
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=3600")
	_ = json.NewEncoder(w).Encode(ClientMetadataDocument(origin))
}

// register returns the gateway's client at d's authorization server for rt.
func (s *Service) register(ctx context.Context, rt *Route, d *discovered) (registration, error) {
	if c := rt.Discovery; c.ClientID != "" {
		return registration{Kind: RegistrationConfigured, ClientID: c.ClientID, Secret: c.ClientSecret}, nil
	}
	// Every upstream route of a host shares its callback URL: beside other routes, a public
	// client's code could be handed to another route's provider, which would redeem it with
	// the verifier the gateway sends it. Only RFC 9207 iss tells such a code apart.
	publicOK := len(s.byHost[rt.Host]) < 2 || d.as.IssParameter
	if d.as.CIMD && publicOK && s.documentURLAllowed(rt.Origin) {
		return registration{Kind: RegistrationDocument, ClientID: rt.Origin + paths.UpstreamClientMetadata, AuthMethod: "none"}, nil
	}
	if d.as.RegistrationEndpoint == "" {
		return registration{}, &DiscoveryError{Kind: FailRegistrationRefused, What: "registration", URL: endpointLabel(d.as.Issuer),
			Reason: "the authorization server offers neither client ID metadata documents nor dynamic registration, and the route has no client_id"}
	}
	issuer, redirect := d.as.Issuer, rt.CallbackURL()
	if rec, err := s.store.GetUpstreamClient(ctx, issuer, redirect, s.now()); err == nil {
		if reg, err := s.openRegistration(rec); err == nil {
			return reg, publicAllowed(reg, publicOK, d)
		}
		_ = s.store.DeleteUpstreamClient(ctx, issuer, redirect, rec.CreatedAt)
	} else if !errors.Is(err, store.ErrNotFound) {
		return registration{}, fmt.Errorf("read upstream registration: %w", err)
	}
	reg, expires, err := s.registerDynamic(ctx, d, redirect, publicOK)
	if err != nil {
		return registration{}, err
	}
	if err := publicAllowed(reg, publicOK, d); err != nil {
		return registration{}, err
	}
	raw, _ := json.Marshal(reg)
	rec := store.UpstreamClient{Issuer: issuer, RedirectURI: redirect, ExpiresAt: expires, CreatedAt: s.now(),
		Sealed: s.sealer.Seal(raw, registrationPurpose(issuer, redirect))}
	switch err := s.store.CreateUpstreamClient(ctx, rec); {
	case errors.Is(err, store.ErrAlreadyExists):
		// Another replica registered meanwhile: use its registration, forget ours.
		got, err := s.store.GetUpstreamClient(ctx, issuer, redirect, s.now())
		if err != nil {
			return registration{}, fmt.Errorf("read upstream registration: %w", err)
		}
		reg, err := s.openRegistration(got)
		if err != nil {
			return registration{}, err
		}
		return reg, publicAllowed(reg, publicOK, d)
	case err != nil:
		return registration{}, fmt.Errorf("store upstream registration: %w", err)
	}
	reg.createdAt = rec.CreatedAt
	s.log.InfoContext(ctx, "registered at an upstream authorization server", "issuer", issuer, "redirect_uri", redirect)
	return reg, nil
}

// publicAllowed refuses a public registration (no client secret) where publicOK is false.
func publicAllowed(reg registration, publicOK bool, d *discovered) error {
	if reg.Secret != "" || publicOK {
		return nil
	}
	return &DiscoveryError{Kind: FailRegistrationRefused, What: "dynamic client registration", URL: endpointLabel(d.as.RegistrationEndpoint),
		Reason: "the server registers only public clients and does not send iss (RFC 9207), which a public client needs beside other upstream routes of its host"}
}

// forgetRegistration removes a dynamic registration the server no longer accepts.
func (s *Service) forgetRegistration(ctx context.Context, rt *Route, d *discovered, reg registration) {
	if reg.Kind != RegistrationDynamic {
		return
	}
	if err := s.store.DeleteUpstreamClient(ctx, d.as.Issuer, rt.CallbackURL(), reg.createdAt); err == nil {
		s.log.InfoContext(ctx, "upstream registration refused by its server; registering again on next use", "issuer", d.as.Issuer)
	}
}

func (s *Service) openRegistration(rec store.UpstreamClient) (registration, error) {
	raw, err := s.sealer.Open(rec.Sealed, registrationPurpose(rec.Issuer, rec.RedirectURI))
	if err != nil {
		return registration{}, errors.New("the stored registration cannot be opened")
	}
	var reg registration
	if err := json.Unmarshal(raw, &reg); err != nil || reg.ClientID == "" {
		return registration{}, errors.New("the stored registration is malformed")
	}
	reg.Kind, reg.createdAt = RegistrationDynamic, rec.CreatedAt
	return reg, nil
}

func registrationPurpose(issuer, redirect string) string {
	return "upstream-registration\x00" + issuer + "\x00" + redirect
}

// registerDynamic registers at d's registration endpoint (RFC 7591): a confidential client
// when the server offers client_secret_basic or client_secret_post, else (when publicOK) a
// public one.
func (s *Service) registerDynamic(ctx context.Context, d *discovered, redirect string, publicOK bool) (registration, time.Time, error) {
	const what = "dynamic client registration"
	endpoint := d.as.RegistrationEndpoint
	method := "client_secret_basic" // RFC 8414's default when none are listed
	if m := d.as.TokenAuthMethods; len(m) > 0 {
		method = ""
		for _, want := range []string{"client_secret_basic", "client_secret_post", "none"} {
			if slices.Contains(m, want) && (want != "none" || publicOK) {
				method = want
				break
			}
		}
		if method == "" && slices.Contains(m, "none") {
			return registration{}, time.Time{}, publicAllowed(registration{}, false, d)
		}
		if method == "" {
			return registration{}, time.Time{}, &DiscoveryError{Kind: FailRegistrationRefused, What: what, URL: endpointLabel(endpoint),
				Reason: "the server offers no token endpoint authentication method the gateway supports"}
		}
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                "MCP gateway",
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
	})
	ctx, cancel := context.WithTimeout(ctx, s.callTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(string(body)))
	if err != nil {
		return registration{}, time.Time{}, &DiscoveryError{Kind: FailRegistrationRefused, What: what, URL: endpointLabel(endpoint), Reason: "cannot build the request"}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := s.disc.client.Do(req)
	if err != nil {
		err := s.disc.fetchError(what, endpoint, err)
		var de *DiscoveryError
		if errors.As(err, &de) && de.Kind != FailForbiddenAddress {
			de.Kind = FailRegistrationRefused // the page names the registration, not the metadata
		}
		return registration{}, time.Time{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil || len(raw) > MaxResponseBytes {
		return registration{}, time.Time{}, &DiscoveryError{Kind: FailRegistrationRefused, What: what, URL: endpointLabel(endpoint), Reason: "the answer could not be read or is too large"}
	}
	reg, expires, err := ParseRegistrationResponse(resp.StatusCode, raw, s.now())
	if err != nil {
		return registration{}, time.Time{}, &DiscoveryError{Kind: FailRegistrationRefused, What: what, URL: endpointLabel(endpoint), Reason: err.Error()}
	}
	if reg.AuthMethod == "" {
		reg.AuthMethod = method
	}
	return reg, expires, nil
}

// registeredRegistrationErrors are the error codes of RFC 7591 §3.2.2: only these are shown.
var registeredRegistrationErrors = map[string]bool{
	"invalid_redirect_uri": true, "invalid_client_metadata": true, "invalid_software_statement": true,
	"unapproved_software_statement": true, "invalid_request": true, "access_denied": true,
	"server_error": true, "temporarily_unavailable": true,
}

// ParseRegistrationResponse reads an RFC 7591 registration answer: 201 (or 200) with a JSON
// object holding client_id, and client_secret and client_secret_expires_at when the client
// is confidential. Anything else is an error naming the status and a registered error code.
func ParseRegistrationResponse(status int, body []byte, now time.Time) (registration, time.Time, error) {
	var doc struct {
		ClientID   *string `json:"client_id"`
		Secret     *string `json:"client_secret"`
		Expires    *int64  `json:"client_secret_expires_at"`
		AuthMethod *string `json:"token_endpoint_auth_method"`
		Error      *string `json:"error"`
	}
	derr := decodeObject(body, &doc)
	if status != http.StatusCreated && status != http.StatusOK {
		code := ""
		if derr == nil && doc.Error != nil {
			code = *doc.Error
			if !registeredRegistrationErrors[code] {
				code = "unregistered"
			}
		}
		if code != "" {
			return registration{}, time.Time{}, fmt.Errorf("it answered HTTP %d, error %s", status, code)
		}
		return registration{}, time.Time{}, fmt.Errorf("it answered HTTP %d", status)
	}
	if derr != nil {
		return registration{}, time.Time{}, errors.New("the answer is not a JSON object")
	}
	if doc.ClientID == nil || *doc.ClientID == "" || len(*doc.ClientID) > maxTokenLen || !printable(*doc.ClientID, false) {
		return registration{}, time.Time{}, errors.New("the answer has no usable client_id")
	}
	reg := registration{Kind: RegistrationDynamic, ClientID: *doc.ClientID}
	if doc.Secret != nil && *doc.Secret != "" {
		if len(*doc.Secret) > maxTokenLen || !printable(*doc.Secret, false) {
			return registration{}, time.Time{}, errors.New("the answer's client_secret is malformed")
		}
		reg.Secret = *doc.Secret
	}
	if doc.AuthMethod != nil {
		switch m := *doc.AuthMethod; m {
		case "client_secret_basic", "client_secret_post":
			if reg.Secret == "" {
				return registration{}, time.Time{}, errors.New("the server chose " + m + " but sent no client_secret")
			}
			reg.AuthMethod = m
		case "none":
			reg.AuthMethod, reg.Secret = m, ""
		default:
			return registration{}, time.Time{}, errors.New("the server chose a token endpoint authentication method the gateway does not support")
		}
	}
	var expires time.Time
	if doc.Expires != nil && *doc.Expires > 0 {
		expires = time.Unix(*doc.Expires, 0)
		if !expires.After(now) {
			return registration{}, time.Time{}, errors.New("the client secret it issued has already expired")
		}
	}
	return reg, expires, nil
}

// documentURLAllowed reports whether a client ID metadata document URL on origin can be
// fetched by an authorization server: https (or loopback http when discovery allows it).
func (s *Service) documentURLAllowed(origin string) bool {
	if strings.HasPrefix(origin, "https://") {
		return true
	}
	h := strings.TrimPrefix(origin, "http://")
	if i := strings.LastIndexByte(h, ':'); i > 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	return s.disc.loopbackHTTP && config.IsLoopbackHost(h)
}
