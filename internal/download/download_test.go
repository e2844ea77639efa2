package download

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func client(t *testing.T, srv *httptest.Server) *Client {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	c, err := New(Options{Getenv: func(k string) string {
		if k == "SSL_CERT_FILE" {
			return ca
		}
		return ""
	}, Retries: 2, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestHTTPSOnly(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-http":
			http.Redirect(w, r, "http://"+r.Host+"/x", http.StatusFound)
		case "/to-https":
			http.Redirect(w, r, srv.URL+"/x", http.StatusFound)
		default:
			w.Write([]byte("ok"))
		}
	}))
	defer srv.Close()
	c := client(t, srv)
	ctx := context.Background()
	tests := []struct {
		name, url, want, err string
	}{
		{name: "https", url: srv.URL + "/x", want: "ok"},
		{name: "redirect within https", url: srv.URL + "/to-https", want: "ok"},
		{name: "plain http", url: "http://example.invalid/x", err: "refusing http://example.invalid/x: not https"},
		{name: "redirect to http", url: srv.URL + "/to-http", err: "GET " + srv.URL + "/to-http: refusing redirect to http://" + strings.TrimPrefix(srv.URL, "https://") + "/x: not https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.Get(ctx, tt.url, 100, nil)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Get(%s) = %q, %v; want error %q", tt.url, got, err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Get(%s) = %q, %v", tt.url, got, err)
			}
		})
	}
}

func TestRetryThenSuccess(t *testing.T) {
	n := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		if n < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	got, err := client(t, srv).Get(context.Background(), srv.URL, 100, nil)
	if err != nil || string(got) != "ok" || n != 3 {
		t.Fatalf("Get() = %q, %v after %d requests; want ok after 3", got, err, n)
	}
}

func TestLimit(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 101)))
	}))
	defer srv.Close()
	_, err := client(t, srv).Get(context.Background(), srv.URL, 100, nil)
	if err == nil || err.Error() != "GET "+srv.URL+": response larger than 100 bytes" {
		t.Fatalf("Get() = %v", err)
	}
}

func TestBadCertFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.pem")
	os.WriteFile(bad, []byte("not a cert"), 0o644)
	_, err := New(Options{Getenv: func(string) string { return bad }})
	if err == nil || err.Error() != "SSL_CERT_FILE "+bad+": no PEM certificates" {
		t.Fatalf("New() = %v", err)
	}
}

func TestContentRange(t *testing.T) {
	tests := []struct {
		in           string
		start, total int64
		ok           bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes 100-199/*", 100, -1, true},
		{"bytes */200", 0, 0, false},
		{"items 1-2/3", 0, 0, false},
		{"bytes -5-10/20", 0, 0, false},
	}
	for _, tt := range tests {
		s, tot, ok := contentRange(tt.in)
		if s != tt.start || tot != tt.total || ok != tt.ok {
			t.Errorf("contentRange(%q) = %d, %d, %v; want %d, %d, %v", tt.in, s, tot, ok, tt.start, tt.total, tt.ok)
		}
	}
}

// TestStatusQuoted: the reason phrase of an HTTP status is the server's
// text; escape sequences in it reach root's terminal only quoted.
func TestStatusQuoted(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		buf.WriteString("HTTP/1.1 403 \x1b]0;owned\x07\x1b[2J\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
		buf.Flush()
		conn.Close()
	}))
	srv.Config.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	defer srv.Close()
	_, err := client(t, srv).Get(context.Background(), srv.URL+"/x", 100, nil)
	want := "GET " + srv.URL + `/x: HTTP "403 \x1b]0;owned\a\x1b[2J"`
	if err == nil || err.Error() != want {
		t.Errorf("Get() = %v, want %q", err, want)
	}
}

// TestTrustCertFile: with Trust set (root), an SSL_CERT_FILE that Trust
// refuses is skipped with one line, and the CAs come from a system bundle
// that Trust passes, never from the refused file.
func TestTrustCertFile(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	bundle := ""
	for _, f := range SystemBundles {
		if _, err := os.Stat(f); err == nil {
			bundle = f
			break
		}
	}
	if bundle == "" {
		t.Skip("no system CA bundle here")
	}
	var lines []string
	c, err := New(Options{
		Getenv: func(k string) string {
			if k == "SSL_CERT_FILE" {
				return ca
			}
			return ""
		},
		Trust: func(what, p string) error {
			if p == ca {
				return errors.New(what + " " + p + " is not root's")
			}
			return nil
		},
		Logf:    func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) },
		Retries: 1, Backoff: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "SSL_CERT_FILE " + ca + " is not root's; skipped"; len(lines) != 1 || lines[0] != want {
		t.Errorf("lines = %q, want %q", lines, want)
	}
	_, err = c.Get(context.Background(), srv.URL+"/x", 100, nil)
	if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("Get() = %v, want the test CA untrusted", err)
	}
}
