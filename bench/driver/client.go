package driver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// client speaks the V2 session routes both systems serve.
type client struct {
	base string
	hc   *http.Client
	loc  string // the Location directory sessions are created in
}

func newClient(base, loc string) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 4096
	tr.MaxIdleConnsPerHost = 4096
	return &client{base: strings.TrimRight(base, "/"), hc: &http.Client{Transport: tr}, loc: loc}
}

func (c *client) close() { c.hc.CloseIdleConnections() }

// do sends body (when not nil) as JSON and decodes a 2xx answer into out.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: read: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode %q: %w", method, path, truncate(b, 200), err)
		}
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func (c *client) healthy(ctx context.Context) bool {
	return c.do(ctx, http.MethodGet, "/api/health", nil, nil) == nil
}

func (c *client) createSession(ctx context.Context) (string, error) {
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	body := map[string]any{"location": map[string]string{"directory": c.loc}}
	if err := c.do(ctx, http.MethodPost, "/api/session", body, &out); err != nil {
		return "", err
	}
	if out.Data.ID == "" {
		return "", errors.New("POST /api/session: no session ID in the answer")
	}
	return out.Data.ID, nil
}

// turn admits one prompt carrying marker and returns once the session's
// newest message is the assistant's reply naming it.
func (c *client) turn(ctx context.Context, id, marker string) error {
	body := map[string]any{"prompt": map[string]string{"text": "Run echo hi with bash " + marker}}
	if err := c.do(ctx, http.MethodPost, "/api/session/"+id+"/prompt", body, nil); err != nil {
		return err
	}
	for {
		if err := c.do(ctx, http.MethodPost, "/api/session/"+id+"/wait", nil, nil); err != nil {
			return err
		}
		done, err := c.answered(ctx, id, marker)
		if err != nil || done {
			return err
		}
		// The drain may not have started when wait was asked: ask again,
		// spaced so a slow server is not hammered.
		select {
		case <-ctx.Done():
			return fmt.Errorf("session %s: no reply to %s: %w", id, marker, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (c *client) answered(ctx context.Context, id, marker string) (bool, error) {
	var out struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/session/"+id+"/message?limit=1&order=desc", nil, &out); err != nil {
		return false, err
	}
	if len(out.Data) == 0 {
		return false, nil
	}
	var m struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(out.Data[0], &m); err != nil {
		return false, fmt.Errorf("session %s newest message: %w", id, err)
	}
	if m.Type != "assistant" {
		return false, nil
	}
	if len(m.Error) > 0 && string(m.Error) != "null" {
		return false, fmt.Errorf("session %s: the reply failed: %s", id, m.Error)
	}
	return bytes.Contains(out.Data[0], []byte(marker)), nil
}
