package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/mcpmesh/gateway/shared/checkapi"
	"github.com/mcpmesh/gateway/tokensvc/check"
	"github.com/mcpmesh/gateway/tokensvc/secret"
)

// statusBadRequest is the Status of a check request the service cannot answer (the filter
// fails closed on it).
const statusBadRequest = check.StatusInvalidRequest

// requireFilterKey answers 401 with nothing else unless the request carries the filter key:
// on the check API nothing happens before the key is verified.
func (s *Server) requireFilterKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !secret.Equal(r.Header.Get(checkapi.KeyHeader), s.filterKey) {
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// handleCheck serves the check API (POST paths.Check, behind requireFilterKey): it decodes the
// request, asks the checker (package check decides) and replies.
func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	var req checkapi.Request
	if status, msg := decodeCheck(r.Body, &req); status != 0 {
		s.checkReply(w, status, &checkapi.Response{Status: statusBadRequest, Error: "invalid_request", ErrorDescription: msg})
		return
	}
	resp, refusal := s.checker.Check(r.Context(), &req)
	status := http.StatusOK
	if refusal != nil {
		status, resp = refusal.HTTPStatus(), refusal.Response
		if refusal.Err != nil {
			s.log.ErrorContext(r.Context(), "check failed", "route_id", req.RouteID, "error", refusal.Err.Error())
		}
	}
	s.checkReply(w, status, resp)
}

// decodeCheck reads one JSON request from body (bounded by the middleware).
func decodeCheck(body io.Reader, req *checkapi.Request) (int, string) {
	dec := json.NewDecoder(body)
	if err := dec.Decode(req); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return http.StatusRequestEntityTooLarge, "request body too large"
		}
		return http.StatusBadRequest, "request body is not a JSON check request"
	}
	if _, err := dec.Token(); err != io.EOF {
		return http.StatusBadRequest, "request body has data after the JSON object"
	}
	return 0, ""
}

func (s *Server) checkReply(w http.ResponseWriter, status int, resp *checkapi.Response) {
	b, err := json.Marshal(resp)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"status":"error","error":"server_error"}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
