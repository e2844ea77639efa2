package fakeapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func post(t *testing.T, s *Server, path, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

const loopBody = `{"model":"m1","tools":[{"name":"Bash"}],"messages":[{"role":"user","content":"hi"}]}`

// event is one server-sent event.
type event struct {
	Name string
	Data map[string]any
}

func parseSSE(t *testing.T, r io.Reader) []event {
	t.Helper()
	var evs []event
	var name string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
			if d["type"] != name {
				t.Errorf("event %q carries type %v", name, d["type"])
			}
			evs = append(evs, event{name, d})
		case line == "":
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return evs
}

// assemble rebuilds the content blocks from a stream, as a client does.
func assemble(t *testing.T, evs []event) (content []map[string]any, stop string) {
	t.Helper()
	partial := map[int]string{}
	for _, e := range evs {
		switch e.Name {
		case "content_block_start":
			cb := e.Data["content_block"].(map[string]any)
			content = append(content, cb)
		case "content_block_delta":
			i := int(e.Data["index"].(float64))
			d := e.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				content[i]["text"] = content[i]["text"].(string) + d["text"].(string)
			case "input_json_delta":
				partial[i] += d["partial_json"].(string)
			}
		case "content_block_stop":
			i := int(e.Data["index"].(float64))
			if js, ok := partial[i]; ok {
				var in map[string]any
				if err := json.Unmarshal([]byte(js), &in); err != nil {
					t.Fatalf("block %d input %q: %v", i, js, err)
				}
				content[i]["input"] = in
			}
		case "message_delta":
			stop = e.Data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	if len(evs) < 2 || evs[0].Name != "message_start" || evs[len(evs)-1].Name != "message_stop" {
		t.Fatalf("stream does not start with message_start and end with message_stop: %v", evs)
	}
	return content, stop
}

func TestStreamAndJSON(t *testing.T) {
	turns := []Turn{
		{Text("héllo wörld"), Bash("t1", "pwd; ls")},
		{Read("t2", "/p/f"), Write("t3", "/p/g", "x\n"), Edit("t4", "/p/g", "x", "y"), WebFetch("t5", "http://a.test/", "what")},
		{Text("done")},
	}
	want := [][]map[string]any{
		{
			{"type": "text", "text": "héllo wörld"},
			{"type": "tool_use", "id": "t1", "name": "Bash", "input": map[string]any{"command": "pwd; ls", "description": "run t1"}},
		},
		{
			{"type": "tool_use", "id": "t2", "name": "Read", "input": map[string]any{"file_path": "/p/f"}},
			{"type": "tool_use", "id": "t3", "name": "Write", "input": map[string]any{"file_path": "/p/g", "content": "x\n"}},
			{"type": "tool_use", "id": "t4", "name": "Edit", "input": map[string]any{"file_path": "/p/g", "old_string": "x", "new_string": "y"}},
			{"type": "tool_use", "id": "t5", "name": "WebFetch", "input": map[string]any{"url": "http://a.test/", "prompt": "what"}},
		},
		{{"type": "text", "text": "done"}},
	}
	wantStop := []string{"tool_use", "tool_use", "end_turn"}
	for _, stream := range []bool{true, false} {
		name := "json"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			s := Start(t, New(turns...))
			for i := range turns {
				body := strings.Replace(loopBody, `{"model"`, `{"stream":`+map[bool]string{true: "true", false: "false"}[stream]+`,"model"`, 1)
				resp, b := post(t, s, "/v1/messages?beta=true", body)
				if resp.StatusCode != 200 {
					t.Fatalf("turn %d: status %d: %s", i, resp.StatusCode, b)
				}
				var content []map[string]any
				var stop string
				if stream {
					if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
						t.Errorf("Content-Type = %q", ct)
					}
					content, stop = assemble(t, parseSSE(t, strings.NewReader(string(b))))
				} else {
					var m struct {
						Model, Role, Type string
						Content           []map[string]any
						StopReason        string `json:"stop_reason"`
					}
					if err := json.Unmarshal(b, &m); err != nil {
						t.Fatalf("turn %d: %v: %s", i, err, b)
					}
					if m.Model != "m1" || m.Role != "assistant" || m.Type != "message" {
						t.Errorf("turn %d: message %+v", i, m)
					}
					content, stop = m.Content, m.StopReason
				}
				if !reflect.DeepEqual(content, want[i]) {
					t.Errorf("turn %d: content = %v, want %v", i, content, want[i])
				}
				if stop != wantStop[i] {
					t.Errorf("turn %d: stop_reason = %q, want %q", i, stop, wantStop[i])
				}
			}
			if got := s.Served(); got != 3 {
				t.Errorf("Served() = %d, want 3", got)
			}
			if errs := s.Errors(); len(errs) != 0 {
				t.Errorf("Errors() = %v", errs)
			}
			// One more loop request than the script has: an error, and
			// the agent still gets a well-formed answer.
			resp, b := post(t, s, "/v1/messages", loopBody)
			if resp.StatusCode != 200 || !strings.Contains(string(b), "the script has ended") {
				t.Errorf("after the script: %d %s", resp.StatusCode, b)
			}
			if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "after the end of the script") {
				t.Errorf("Errors() after the script = %v", errs)
			}
		})
	}
}

func TestSideRequestsAndOtherEndpoints(t *testing.T) {
	s := Start(t, New(Turn{Text("scripted")}))
	s.SideText = "side answer"
	_, b := post(t, s, "/v1/messages", `{"model":"small","messages":[{"role":"user","content":"title?"}]}`)
	if !strings.Contains(string(b), "side answer") || strings.Contains(string(b), "scripted") {
		t.Errorf("side request answered %s", b)
	}
	if s.Served() != 0 {
		t.Errorf("a side request consumed a turn")
	}
	resp, b := post(t, s, "/v1/messages/count_tokens", `{"messages":[]}`)
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(b, &ct) != nil || ct.InputTokens <= 0 {
		t.Errorf("count_tokens: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest(http.MethodHead, s.URL()+"/api/hello", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD /api/hello: %v %v", resp, err)
	}
	resp, b = post(t, s, "/v1/nothing", `{}`)
	if resp.StatusCode != 404 || !strings.Contains(string(b), `"not_found_error"`) {
		t.Errorf("unknown endpoint: %d %s", resp.StatusCode, b)
	}
	resp, b = post(t, s, "/v1/messages", `not json`)
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"invalid_request_error"`) {
		t.Errorf("bad body: %d %s", resp.StatusCode, b)
	}
	var got []string
	for _, r := range s.Requests() {
		got = append(got, r.Method+" "+r.Path)
	}
	want := []string{"POST /v1/messages", "POST /v1/messages/count_tokens", "HEAD /api/hello", "POST /v1/nothing", "POST /v1/messages"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Requests() = %q, want %q", got, want)
	}
	if errs := s.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "not JSON") {
		t.Errorf("Errors() = %v", errs)
	}
}

func TestCycle(t *testing.T) {
	s := New(Turn{Bash("a", "true")}, Turn{Text("done")})
	s.Cycle = true
	Start(t, s)
	for i, want := range []string{`"id":"a"`, `"done"`, `"id":"a"`, `"done"`} {
		if _, b := post(t, s, "/v1/messages", loopBody); !strings.Contains(string(b), want) {
			t.Errorf("request %d: %s, want %s", i, b, want)
		}
	}
	if errs := s.Errors(); len(errs) != 0 {
		t.Errorf("Errors() = %v", errs)
	}
}

func TestToolResults(t *testing.T) {
	s := Start(t, New(Turn{Bash("a", "x")}, Turn{Text("done")}))
	if rs, err := s.ToolResults(); err != nil || len(rs) != 0 {
		t.Errorf("before any request: %v, %v", rs, err)
	}
	post(t, s, "/v1/messages", loopBody)
	// The agent's next request carries the whole conversation; results
	// come as a string or as text blocks.
	post(t, s, "/v1/messages", `{"tools":[{}],"messages":[
		{"role":"user","content":"hi"},
		{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"a","content":"out\nput"},
			{"type":"tool_result","tool_use_id":"b","content":[{"type":"text","text":"one"},{"type":"image"},{"type":"text","text":"two"}],"is_error":true},
			{"type":"text","text":"not a result"}]}]}`)
	// A side request after it does not hide the loop's results.
	post(t, s, "/v1/messages", `{"messages":[{"role":"user","content":"title?"}]}`)
	rs, err := s.ToolResults()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ToolResult{
		"a": {ID: "a", Content: "out\nput"},
		"b": {ID: "b", Content: "one\ntwo", IsError: true},
	}
	if !reflect.DeepEqual(rs, want) {
		t.Errorf("ToolResults() = %+v, want %+v", rs, want)
	}
	if _, err := s.ToolResult("c"); err == nil || !strings.Contains(err.Error(), "no tool_result for c") {
		t.Errorf("ToolResult(c) error = %v", err)
	}
}
