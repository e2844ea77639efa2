// Package fakeapi is a scripted stand-in for the Anthropic Messages API, for
// tests that run the real agent (`claude -p ...`) with ANTHROPIC_BASE_URL
// pointing at it and a dummy key. It never talks to the network itself.
//
// What the agent (2.1.333 with -p, found by running it against a server
// that logs every request) calls:
//
//   - HEAD /api/hello at start, a connectivity check, unless
//     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1: answered 200 (without
//     that variable it also resolves api.anthropic.com, whatever the base
//     URL);
//   - POST /v1/messages?beta=true with "stream": true for every turn of the
//     tool loop: the body carries "tools" (Bash, Read, Write, Edit, ...;
//     WebFetch is a deferred tool, loaded through ToolSearch) and all
//     messages so far, the tool results included;
//   - nothing else in those runs. Other versions and modes may send
//     POST /v1/messages without "tools" (side questions on the small
//     model: titles, summaries), answered with SideText without using up
//     the script, and POST /v1/messages/count_tokens, answered with a
//     rough count.
//
// A WebFetch tool call is run by the agent, not by the API: it first asks
// claude.ai whether the domain may be fetched (the result is "Unable to
// verify if domain ... is safe to fetch" without that network; the setting
// "skipWebFetchPreflight": true in ~/.claude/settings.json skips it), then
// fetches the URL over https even when given http (so a page server needs
// TLS and a CA the agent trusts, e.g. NODE_EXTRA_CA_CERTS). What it asks
// the API about a fetched page was not observed yet; a request without
// tools gets SideText.
//
// Anything else is answered 404 with an API error and recorded (see
// Requests), so a test can see what a new agent version asks for.
//
// Requests with tools are the loop: the Nth one is answered with the Nth
// Turn of the script, streamed as server-sent events or as one JSON
// message, as the request asks. A turn with tool_use blocks ends with stop
// reason "tool_use", so the agent runs the tools and sends their results in
// the next request; ToolResult finds them by tool_use id. A request after
// the script's end gets a final text and is reported by Errors.
package fakeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// Block is one content block of an assistant turn: text or a tool call.
type Block struct {
	// Type is "text" or "tool_use".
	Type string
	// Text of a text block.
	Text string
	// ID, Name and Input of a tool_use block.
	ID    string
	Name  string
	Input map[string]any
}

// Text is a text block.
func Text(s string) Block { return Block{Type: "text", Text: s} }

// ToolUse is a tool_use block calling tool name with input; id is what the
// agent's tool_result refers to.
func ToolUse(id, name string, input map[string]any) Block {
	return Block{Type: "tool_use", ID: id, Name: name, Input: input}
}

// Bash runs command with the agent's Bash tool.
func Bash(id, command string) Block {
	return ToolUse(id, "Bash", map[string]any{"command": command, "description": "run " + id})
}

// Read reads an absolute path with the Read tool.
func Read(id, path string) Block {
	return ToolUse(id, "Read", map[string]any{"file_path": path})
}

// Write writes content to an absolute path with the Write tool.
func Write(id, path, content string) Block {
	return ToolUse(id, "Write", map[string]any{"file_path": path, "content": content})
}

// Edit replaces old with new in the file at an absolute path with the Edit
// tool (the agent requires a Read of the file earlier in the session).
func Edit(id, path, old, new string) Block {
	return ToolUse(id, "Edit", map[string]any{"file_path": path, "old_string": old, "new_string": new})
}

// WebFetch fetches url with the WebFetch tool.
func WebFetch(id, url, prompt string) Block {
	return ToolUse(id, "WebFetch", map[string]any{"url": url, "prompt": prompt})
}

// Turn is one assistant message of the script.
type Turn []Block

// Request is one HTTP request the server received.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	// Loop is set for a /v1/messages request with tools (a turn of the
	// loop); Stream when it asked for server-sent events.
	Loop, Stream bool
}

// ToolResult is a tool_result block the agent sent back.
type ToolResult struct {
	ID      string
	Content string // the text parts, joined with newlines
	IsError bool
}

// Server is the fake API. Its zero value is not usable; use New.
type Server struct {
	// SideText answers /v1/messages requests without tools.
	SideText string
	// Cycle restarts the script after its last turn (for benchmarks that
	// run one session after another) instead of reporting an error.
	Cycle bool

	mu       sync.Mutex
	script   []Turn
	next     int
	requests []Request
	errs     []error
	srv      *http.Server
	addr     string
}

// New returns a server that answers the loop with turns, in order.
func New(turns ...Turn) *Server {
	return &Server{SideText: "ok", script: turns}
}

// Start serves s on a new listener on 127.0.0.1 (any free port) until the
// test ends, and returns s.
func Start(t testing.TB, s *Server) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.StartOn(t, l)
	return s
}

// StartOn serves s on l (which may be bound in another network namespace)
// until the test ends.
func (s *Server) StartOn(t testing.TB, l net.Listener) {
	done := make(chan struct{})
	s.setListener(l)
	go func() {
		defer close(done)
		s.Serve(l)
	}()
	t.Cleanup(func() {
		s.Close()
		<-done
	})
}

func (s *Server) setListener(l net.Listener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv == nil {
		s.srv = &http.Server{Handler: s}
	}
	s.addr = l.Addr().String()
}

// Serve answers requests on l until Close; it returns http.ErrServerClosed
// after Close.
func (s *Server) Serve(l net.Listener) error {
	s.setListener(l)
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	return srv.Serve(l)
}

// Close stops the server and closes its connections.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Close()
}

// URL is the base URL for ANTHROPIC_BASE_URL ("http://ADDR").
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr
}

// Requests returns a copy of every request received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Served is how many turns of the script were sent.
func (s *Server) Served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// Errors returns what went wrong while serving: requests after the end of
// the script, bodies that are not JSON.
func (s *Server) Errors() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.errs...)
}

// ToolResults returns every tool_result block in the messages of the last
// loop request (which carries the whole conversation), by tool_use id.
func (s *Server) ToolResults() (map[string]ToolResult, error) {
	var last *Request
	for _, r := range s.Requests() {
		if r.Loop {
			last = &r
		}
	}
	out := map[string]ToolResult{}
	if last == nil {
		return out, nil
	}
	return out, toolResults(last.Body, out)
}

// ToolResult returns the result the agent sent for tool_use id.
func (s *Server) ToolResult(id string) (ToolResult, error) {
	all, err := s.ToolResults()
	if err != nil {
		return ToolResult{}, err
	}
	r, ok := all[id]
	if !ok {
		return ToolResult{}, fmt.Errorf("no tool_result for %s in the requests", id)
	}
	return r, nil
}

type messagesBody struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func toolResults(body []byte, out map[string]ToolResult) error {
	var b messagesBody
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	for _, m := range b.Messages {
		var blocks []contentBlock
		if len(m.Content) == 0 || m.Content[0] != '[' {
			continue // a plain string
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return fmt.Errorf("message content: %w", err)
		}
		for _, c := range blocks {
			if c.Type != "tool_result" {
				continue
			}
			text, err := resultText(c.Content)
			if err != nil {
				return fmt.Errorf("tool_result %s: %w", c.ToolUseID, err)
			}
			out[c.ToolUseID] = ToolResult{ID: c.ToolUseID, Content: text, IsError: c.IsError}
		}
	}
	return nil
}

// resultText is a tool_result's content: a string, or blocks whose text
// parts are joined with newlines.
func resultText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var s string
	if raw[0] == '"' {
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var blocks []contentBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", err
	}
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n"), nil
}

// ServeHTTP answers one request of the agent.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	switch {
	case r.URL.Path == "/api/hello":
		s.record(req, nil)
		w.WriteHeader(http.StatusOK)
	case r.URL.Path == "/v1/messages/count_tokens" && r.Method == http.MethodPost:
		s.record(req, nil)
		writeJSON(w, map[string]any{"input_tokens": len(body)/4 + 1})
	case r.URL.Path == "/v1/messages" && r.Method == http.MethodPost:
		var b messagesBody
		if err := json.Unmarshal(body, &b); err != nil {
			s.record(req, fmt.Errorf("POST /v1/messages: body is not JSON: %w", err))
			apiError(w, http.StatusBadRequest, "invalid_request_error", "body is not JSON")
			return
		}
		req.Loop, req.Stream = len(b.Tools) > 0, b.Stream
		turn := Turn{Text(s.SideText)}
		if req.Loop {
			s.mu.Lock()
			if s.Cycle && len(s.script) > 0 && s.next == len(s.script) {
				s.next = 0
			}
			if s.next < len(s.script) {
				turn = s.script[s.next]
				s.next++
			} else {
				s.errs = append(s.errs, fmt.Errorf("loop request %d after the end of the script (%d turns)", s.next+1, len(s.script)))
				turn = Turn{Text("the script has ended")}
			}
			s.mu.Unlock()
		}
		s.record(req, nil)
		model := b.Model
		if model == "" {
			model = "claude-fake"
		}
		if b.Stream {
			writeStream(w, model, turn)
		} else {
			writeJSON(w, message(model, turn))
		}
	default:
		s.record(req, nil)
		apiError(w, http.StatusNotFound, "not_found_error", "fakeapi: no such endpoint: "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) record(r Request, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	if err != nil {
		s.errs = append(s.errs, err)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, code int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	})
}

var msgID struct {
	sync.Mutex
	n int
}

func newID() string {
	msgID.Lock()
	defer msgID.Unlock()
	msgID.n++
	return fmt.Sprintf("msg_fake%04d", msgID.n)
}

func stopReason(turn Turn) string {
	for _, b := range turn {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

func usage() map[string]any {
	return map[string]any{"input_tokens": 10, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
}

func input(b Block) map[string]any {
	if b.Input == nil {
		return map[string]any{}
	}
	return b.Input
}

// message is turn as one non-streaming response.
func message(model string, turn Turn) map[string]any {
	content := []any{}
	for _, b := range turn {
		switch b.Type {
		case "tool_use":
			content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": input(b)})
		default:
			content = append(content, map[string]any{"type": "text", "text": b.Text})
		}
	}
	return map[string]any{
		"id": newID(), "type": "message", "role": "assistant", "model": model,
		"content": content, "stop_reason": stopReason(turn), "stop_sequence": nil,
		"usage": usage(),
	}
}

// writeStream sends turn as server-sent events, as the API streams: text
// in two deltas, a tool's input as JSON split in two input_json_delta
// parts, so the agent's accumulation is exercised.
func writeStream(w http.ResponseWriter, model string, turn Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	var buf bytes.Buffer
	ev := func(name string, data map[string]any) {
		d, _ := json.Marshal(data)
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", name, d)
	}
	u := usage()
	u["output_tokens"] = 1
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": newID(), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": u,
	}})
	for i, b := range turn {
		switch b.Type {
		case "tool_use":
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			js, _ := json.Marshal(input(b))
			for _, part := range halves(string(js)) {
				ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		default:
			ev("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, part := range halves(b.Text) {
				ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": part}})
			}
		}
		ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReason(turn), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	ev("message_stop", map[string]any{"type": "message_stop"})
	w.Write(buf.Bytes())
}

// halves splits s in two at a rune boundary (one part if s is short).
func halves(s string) []string {
	r := []rune(s)
	if len(r) < 2 {
		return []string{s}
	}
	return []string{string(r[:len(r)/2]), string(r[len(r)/2:])}
}
