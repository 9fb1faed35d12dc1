// Package toollock reads the tools an MCP server lists, exactly as it sends them, to write
// or check a tool lock file (docs/tool-pinning.md, shared/tooldigest). It speaks MCP's
// streamable HTTP transport itself — initialize, notifications/initialized, tools/list page by
// page — so that each tool's JSON reaches the digest byte for byte as the gateway's filter
// will see it (an SDK would decode and re-encode it).
package toollock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ProtocolVersion is the MCP revision the client asks for.
const ProtocolVersion = "2025-11-25"

// maxResponse bounds a response body.
const maxResponse = 8 << 20

// maxPages bounds the tools/list pages read.
const maxPages = 1000

// Client lists the tools of one MCP server.
type Client struct {
	// URL is the MCP endpoint.
	URL string
	// Header is sent with every request (an Authorization header, for example).
	Header http.Header
	// HTTP is the client used; http.DefaultClient when nil.
	HTTP *http.Client

	session, version string
	nextID           int
}

// Tools returns the server's name and version ("name version") and the JSON object of every
// tool it lists, in order, all pages read.
func (c *Client) Tools(ctx context.Context) (server string, tools []json.RawMessage, err error) {
	init, err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "toollock", "version": "1"},
	})
	if err != nil {
		return "", nil, fmt.Errorf("initialize: %w", err)
	}
	var ir struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(init, &ir); err != nil {
		return "", nil, fmt.Errorf("initialize: result: %w", err)
	}
	c.version = ir.ProtocolVersion
	server = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	if err := c.notify(ctx, "notifications/initialized"); err != nil {
		return "", nil, err
	}
	defer c.close(context.WithoutCancel(ctx))
	cursor := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return "", nil, fmt.Errorf("tools/list: more than %d pages", maxPages)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, err := c.call(ctx, "tools/list", params)
		if err != nil {
			return "", nil, fmt.Errorf("tools/list: %w", err)
		}
		var lr struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &lr); err != nil {
			return "", nil, fmt.Errorf("tools/list: result: %w", err)
		}
		tools = append(tools, lr.Tools...)
		if lr.NextCursor == "" {
			return server, tools, nil
		}
		cursor = lr.NextCursor
	}
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return http.DefaultClient
}

func (c *Client) request(ctx context.Context, method string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range c.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	if c.version != "" {
		req.Header.Set("MCP-Protocol-Version", c.version)
	}
	return req, nil
}

// call sends a request and returns its result.
func (c *Client) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.nextID++
	id := c.nextID
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	req, err := c.request(ctx, http.MethodPost, body)
	if err != nil {
		return nil, err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
		c.session = s
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	msgs, err := readMessages(resp)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(m, &r) != nil || string(r.ID) != strconv.Itoa(id) {
			continue // a notification or another message
		}
		if r.Error != nil {
			return nil, fmt.Errorf("JSON-RPC error %d: %s", r.Error.Code, r.Error.Message)
		}
		if len(r.Result) == 0 {
			return nil, errors.New("response without result")
		}
		return r.Result, nil
	}
	return nil, errors.New("no response to the request")
}

// readMessages returns the JSON-RPC messages of a response: its body, or the data of each
// event of an event stream.
func readMessages(resp *http.Response) ([]json.RawMessage, error) {
	body := io.LimitReader(resp.Body, maxResponse)
	if !strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream") {
		b, err := io.ReadAll(body)
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
			var batch []json.RawMessage
			err := json.Unmarshal(t, &batch)
			return batch, err
		}
		return []json.RawMessage{b}, nil
	}
	var out []json.RawMessage
	var data []string
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxResponse)
	flush := func() {
		if len(data) > 0 {
			out = append(out, json.RawMessage(strings.Join(data, "\n")))
		}
		data = nil
	}
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			flush()
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
		}
	}
	flush()
	return out, sc.Err()
}

// notify sends a notification.
func (c *Client) notify(ctx context.Context, method string) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	req, err := c.request(ctx, http.MethodPost, body)
	if err != nil {
		return err
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: HTTP %d", method, resp.StatusCode)
	}
	return nil
}

// close ends the session, if the server gave one (best effort).
func (c *Client) close(ctx context.Context) {
	if c.session == "" {
		return
	}
	req, err := c.request(ctx, http.MethodDelete, nil)
	if err != nil {
		return
	}
	if resp, err := c.http().Do(req); err == nil {
		resp.Body.Close()
	}
}
