// The authorization server of a route's flows (upstreamAS): its upstream_oauth2 as
// configured, or, on an upstream_discovery route, what discovery and registration found
// (discover.go, register.go). The connect flow, the code exchange and the refresh read only
// this.

package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// upstreamAS is where a route's flows go: its authorization server and the gateway's client there.
type upstreamAS struct {
	clientID, clientSecret string
	authURL, tokenURL      string
	style                  authStyle
	issuer                 string   // the provider's issuer; "" unknown
	requireIss             bool     // the authorization response must carry iss (RFC 9207)
	scopes                 []string // requested scopes
	resource               string   // RFC 8707 resource of every request; "" none
	http                   *http.Client

	// Of upstream_discovery routes only.
	disc *discovered
	reg  registration
}

// upstreamAS returns rt's upstreamAS. On an upstream_discovery route it may discover and
// register; its errors are then *DiscoveryError (or a store failure).
func (s *Service) upstreamAS(ctx context.Context, rt *Route) (*upstreamAS, error) {
	if c := rt.Config; c != nil {
		style := styleAuto
		switch c.Endpoint.AuthStyle {
		case "header":
			style = styleHeader
		case "params":
			style = styleParams
		}
		return &upstreamAS{
			clientID: c.ClientID, clientSecret: c.ClientSecret, authURL: c.Endpoint.AuthURL, tokenURL: c.Endpoint.TokenURL,
			style: style, issuer: c.Issuer, requireIss: c.Issuer != "", scopes: c.Scopes, http: s.http,
		}, nil
	}
	d, err := s.disc.get(ctx, rt)
	if err != nil {
		return nil, err
	}
	reg, err := s.register(ctx, rt, d)
	if err != nil {
		return nil, err
	}
	return &upstreamAS{
		clientID: reg.ClientID, clientSecret: reg.Secret, authURL: d.as.AuthorizationEndpoint, tokenURL: d.as.TokenEndpoint,
		style: reg.style(), issuer: d.as.Issuer, requireIss: d.as.IssParameter, scopes: d.scopes(rt.Discovery.Scopes),
		resource: d.resource, http: s.disc.client, disc: d, reg: reg,
	}, nil
}

// afterTokenError reacts to a failed token endpoint call of an upstream_discovery route: an
// endpoint that is gone or silent means the metadata may have changed (discover again on
// next use); invalid_client means the server forgot a dynamic registration (register again).
func (s *Service) afterTokenError(ctx context.Context, rt *Route, p *upstreamAS, err error) {
	if p.disc == nil {
		return
	}
	var te *TokenError
	if !errors.As(err, &te) {
		return
	}
	switch {
	case te.Code == "invalid_client" || te.Status == http.StatusUnauthorized:
		s.forgetRegistration(ctx, rt, p.disc, p.reg)
		s.disc.invalidate(rt.ID)
	case te.Status == 0, te.Status == http.StatusNotFound, te.Status == http.StatusGone,
		te.Status == http.StatusMethodNotAllowed, te.Status >= 300 && te.Status < 400:
		s.disc.invalidate(rt.ID)
	}
}

// checkIssuer applies RFC 9207 to an authorization response. upstream_oauth2: with issuer
// set, iss must equal it; without, an iss that is present must be on auth_url's origin.
// upstream_discovery: an iss that is present must equal the discovered issuer, and it must be
// present when the server says it sends one.
func checkIssuer(q url.Values, p *upstreamAS) bool {
	iss, has := q.Get("iss"), q.Has("iss")
	if p.disc != nil {
		if !has {
			return !p.requireIss
		}
		return iss == p.issuer
	}
	return CheckIssuer(iss, has, p.issuer, p.authURL)
}

// failDiscovery renders the page of a failed discovery or registration: which step failed,
// with the request ID (render adds it), and a link back.
func (s *Service) failDiscovery(w http.ResponseWriter, r *http.Request, rt *Route, err error, back string) {
	var de *DiscoveryError
	if !errors.As(err, &de) {
		s.internalError(w, r, "upstream discovery", err)
		return
	}
	s.events.Connect(ConnectFailed)
	s.log.WarnContext(r.Context(), "upstream discovery failed", "route_id", rt.ID, "kind", de.Kind, "error", de.Error())
	renderFailure(w, r, http.StatusBadGateway, "Cannot connect "+rt.Name, de.Public()+". Tell your administrator.", back)
}
