package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpmesh/gateway/sdk/go/assertion"
)

// Limits.
const (
	maxListing   = 1 << 20  // the body of GET /.gateway/mcp/routes
	maxForm      = 16 << 10 // the tool form
	maxArguments = 4 << 10  // the arguments field
	maxLLMAnswer = 64 << 10 // the stand-in's answer
)

// Gateway paths the app uses (docs/token-service.md).
const (
	routesPath     = "/.gateway/mcp/routes"
	connectPath    = "/.gateway/mcp/connect"
	disconnectPath = "/.gateway/mcp/disconnect"
)

type app struct {
	public   *url.URL
	verifier *assertion.Verifier
	llmapi   *url.URL
	client   *http.Client
	csrf     csrfKey
}

func (a *app) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.index)
	mux.HandleFunc("POST /call", a.call)
	return securityHeaders(mux)
}

// origin is the app's public origin; home its page, where connect flows return.
func (a *app) origin() string { return a.public.Scheme + "://" + a.public.Host }
func (a *app) home() string   { return a.origin() + "/" }

// listedServer is an entry of the gateway's route listing.
type listedServer struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Connected bool   `json:"connected"`
}

// identify verifies the request's assertion and returns the identity and the TE. Without a
// verified assertion it answers 401 itself and returns ok=false: such a request did not come
// through the gateway, and nothing in it (the Authorization header included) is trusted.
func (a *app) identify(w http.ResponseWriter, r *http.Request) (*assertion.Identity, string, bool) {
	id, err := a.verifier.VerifyRequest(r)
	if err != nil {
		log.Printf("refused a request without a valid assertion: %v", err)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "This app is only reachable through the gateway: the identity assertion did not verify (%s).\n", assertion.ReasonOf(err))
		return nil, "", false
	}
	scheme, te, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		te = ""
	}
	return id, strings.TrimSpace(te), true
}

// listServers calls the gateway's route listing with the TE.
func (a *app) listServers(ctx context.Context, te string) ([]listedServer, error) {
	if te == "" {
		return nil, errors.New("the gateway sent no External Token")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.origin()+routesPath, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+te)
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", routesPath, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListing+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", routesPath, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %s", routesPath, resp.Status)
	}
	if len(body) > maxListing {
		return nil, fmt.Errorf("GET %s: the listing is over %d bytes", routesPath, maxListing)
	}
	var listing struct {
		Servers []listedServer `json:"servers"`
	}
	if err := json.Unmarshal(body, &listing); err != nil {
		return nil, fmt.Errorf("GET %s: %w", routesPath, err)
	}
	return listing.Servers, nil
}

// serverView is a row of the servers table.
type serverView struct {
	listedServer
	ConnectURL, DisconnectURL string
}

// views adds the Connect and Disconnect links of each server: the gateway's endpoints on the
// server route's host, which send the browser back to this page. Connect names the server
// (route=), so that exactly its upstream flow runs. Disconnect does not: the listing does not
// say which servers have an upstream account, and a disconnect without route= removes the
// user's upstream tokens of every server on that host (none on a host without upstream
// accounts) instead of refusing an unknown route. A server whose URL is not http(s) gets no
// links.
func (a *app) views(servers []listedServer) []serverView {
	out := make([]serverView, 0, len(servers))
	back := url.QueryEscape(a.home())
	for _, s := range servers {
		v := serverView{listedServer: s}
		if u, err := url.Parse(s.URL); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil {
			o := u.Scheme + "://" + u.Host
			v.ConnectURL = o + connectPath + "?redirect_url=" + back + "&route=" + url.QueryEscape(s.URL)
			v.DisconnectURL = o + disconnectPath + "?redirect_url=" + back
		}
		out = append(out, v)
	}
	return out
}

// index renders the page.
func (a *app) index(w http.ResponseWriter, r *http.Request) {
	id, te, ok := a.identify(w, r)
	if !ok {
		return
	}
	a.render(w, r, http.StatusOK, id, te, toolForm{Arguments: "{}"}, nil)
}

// render lists the servers and writes the page.
func (a *app) render(w http.ResponseWriter, r *http.Request, status int, id *assertion.Identity, te string, form toolForm, call *callView) {
	data := pageData{Identity: id, HasTE: te != "", CSRF: a.csrf.token(id.Subject), Form: form, Call: call}
	servers, err := a.listServers(r.Context(), te)
	if err != nil {
		data.ListError = err.Error()
	}
	data.Servers = a.views(servers)
	renderPage(w, status, &data)
}

// toolForm is the tool form's fields.
type toolForm struct {
	Server, Tool, Arguments string
}

// callView is the outcome of a tool call shown on the page.
type callView struct {
	Server, Tool string
	// Kind is "result", "tool-error" (the tool's own error result), "denied" (the gateway
	// refused: HTTP 401/403, or a tool result the gateway wrote in the tool's place) or
	// "failed".
	Kind          string
	Text          string
	GatewayStatus int
}

// call handles the tool form: it checks the CSRF token, hands the TE and the request to the
// LLM API stand-in and shows what came back.
func (a *app) call(w http.ResponseWriter, r *http.Request) {
	id, te, ok := a.identify(w, r)
	if !ok {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form is too large or malformed", http.StatusBadRequest)
		return
	}
	if err := a.checkCSRF(r, id.Subject); err != nil {
		log.Printf("refused a tool form: %v", err)
		http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
		return
	}
	form := toolForm{Server: r.PostForm.Get("server"), Tool: strings.TrimSpace(r.PostForm.Get("tool")), Arguments: r.PostForm.Get("arguments")}
	if strings.TrimSpace(form.Arguments) == "" {
		form.Arguments = "{}"
	}
	var args map[string]any
	switch {
	case form.Tool == "" || len(form.Tool) > 128:
		a.render(w, r, http.StatusBadRequest, id, te, form, &callView{Kind: "failed", Text: "name a tool (at most 128 bytes)"})
		return
	case len(form.Arguments) > maxArguments:
		a.render(w, r, http.StatusBadRequest, id, te, form, &callView{Kind: "failed", Text: fmt.Sprintf("the arguments are over %d bytes", maxArguments)})
		return
	case json.Unmarshal([]byte(form.Arguments), &args) != nil || args == nil:
		a.render(w, r, http.StatusBadRequest, id, te, form, &callView{Kind: "failed", Text: "the arguments must be a JSON object"})
		return
	}
	// The TE goes only to servers the gateway lists for this user.
	servers, err := a.listServers(r.Context(), te)
	if err != nil {
		a.render(w, r, http.StatusBadGateway, id, te, form, &callView{Kind: "failed", Text: err.Error()})
		return
	}
	listed := false
	for _, s := range servers {
		listed = listed || s.URL == form.Server
	}
	if !listed {
		a.render(w, r, http.StatusBadRequest, id, te, form, &callView{Kind: "failed", Text: "pick one of the listed servers"})
		return
	}
	cv := a.callLLM(r.Context(), te, form)
	a.render(w, r, http.StatusOK, id, te, form, cv)
}

// llmAnswer is the stand-in's answer (examples/llmapi callResult).
type llmAnswer struct {
	OK            bool   `json:"ok"`
	IsError       bool   `json:"is_error"`
	Denied        bool   `json:"denied"`
	Text          string `json:"text"`
	Error         string `json:"error"`
	GatewayStatus int    `json:"gateway_status"`
	GatewayBody   string `json:"gateway_body"`
}

// callLLM hands the TE and the tool call to the LLM API stand-in.
func (a *app) callLLM(ctx context.Context, te string, form toolForm) *callView {
	cv := &callView{Server: form.Server, Tool: form.Tool, Kind: "failed"}
	body, _ := json.Marshal(map[string]any{"server_url": form.Server, "tool": form.Tool, "arguments": json.RawMessage(form.Arguments)})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.llmapi.JoinPath("/v1/tool-call").String(), bytes.NewReader(body))
	if err != nil {
		cv.Text = err.Error()
		return cv
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+te)
	resp, err := a.client.Do(req)
	if err != nil {
		cv.Text = "the LLM API stand-in did not answer: " + err.Error()
		return cv
	}
	defer resp.Body.Close()
	var ans llmAnswer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxLLMAnswer)).Decode(&ans); err != nil {
		cv.Text = fmt.Sprintf("the LLM API stand-in answered %s with no readable body", resp.Status)
		return cv
	}
	cv.GatewayStatus = ans.GatewayStatus
	switch {
	case ans.OK && ans.Denied:
		// The gateway answered a denied tools/call as the tool's error result.
		cv.Kind, cv.Text = "denied", ans.Text
	case ans.OK && !ans.IsError:
		cv.Kind, cv.Text = "result", ans.Text
	case ans.OK:
		cv.Kind, cv.Text = "tool-error", ans.Text
	case ans.Denied:
		cv.Kind, cv.Text = "denied", gatewayMessage(ans.GatewayBody, ans.Error)
	default:
		cv.Text = ans.Error
	}
	return cv
}

// gatewayMessage returns the message of the gateway's JSON-RPC (or OAuth) refusal body, or
// fallback.
func gatewayMessage(body, fallback string) string {
	var rpc struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		ErrorDescription string `json:"error_description"`
	}
	if json.Unmarshal([]byte(body), &rpc) == nil {
		if rpc.Error.Message != "" {
			return rpc.Error.Message
		}
		if rpc.ErrorDescription != "" {
			return rpc.ErrorDescription
		}
	}
	if strings.TrimSpace(body) != "" {
		return body
	}
	return fallback
}

// securityHeaders: no framing, no sniffing, no caching of a page that shows who is signed in.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("Referrer-Policy", "same-origin") // "no-referrer" would make form posts send Origin: null
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}
