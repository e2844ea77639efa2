// Package download fetches files over HTTPS for claude-update: proxies from
// the environment, SSL_CERT_FILE, timeouts, retries with exponential backoff,
// and bodies that resume (Range) or restart when a proxy cuts them.
//
// Only https URLs are fetched, redirects included; a proxy itself may be
// reached over http because HTTPS goes through it as an end-to-end TLS
// tunnel (CONNECT).
package download

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/quote"
)

// Options configure a Client. The zero value is usable.
type Options struct {
	// Getenv reads SSL_CERT_FILE; nil means os.Getenv. Proxies come from
	// the process environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, either
	// case), as net/http reads them.
	Getenv func(string) string
	// Retries is how often a failed request or a cut body is tried again
	// (default 4); Backoff the first wait, doubled each time (default 1s).
	Retries int
	Backoff time.Duration
	// Idle is how long a body may deliver nothing before the connection is
	// dropped and the download resumed (default 60s).
	Idle time.Duration
	// Resolver, if set, resolves host names (tests).
	Resolver *net.Resolver
	// Logf, if set, reports retries.
	Logf func(format string, args ...any)

	// What an npm configuration can set (see npmreg.Settings); the zero
	// values keep the defaults above.
	//
	// RootCAs, if set, are the only roots trusted (SSL_CERT_FILE is then
	// not read). Insecure skips certificate verification altogether.
	RootCAs *x509.CertPool
	// Trust, if set (root), vets the CA file before it is read:
	// SSL_CERT_FILE if it passes, else the first system bundle
	// (SystemBundles) that passes; SSL_CERT_DIR is not read. A file it
	// refuses is skipped with one line to Logf.
	Trust    func(what, path string) error
	Insecure bool
	// Proxy replaces the proxies of the environment.
	Proxy func(*http.Request) (*url.URL, error)
	// Authorization returns the Authorization header for a request URL,
	// "" for none. It is asked for every request, redirects included, so
	// that credentials go only where they belong.
	Authorization func(*url.URL) string
}

// Client fetches https URLs.
type Client struct {
	http    *http.Client
	retries int
	backoff time.Duration
	idle    time.Duration
	logf    func(string, ...any)
}

// New returns a Client. It fails if SSL_CERT_FILE is set but holds no
// usable certificate.
func New(o Options) (*Client, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	// Go reads SSL_CERT_FILE of the process environment by itself; reading
	// it here too honours an injected environment and turns a bad file into
	// a clear error instead of a silent fallback to the system roots.
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	f := getenv("SSL_CERT_FILE")
	if f != "" && o.RootCAs == nil && o.Trust != nil {
		if err := o.Trust("SSL_CERT_FILE", f); err != nil {
			logf("%v; skipped", err)
			f = ""
		}
	}
	switch {
	case o.RootCAs != nil:
		tlsConf.RootCAs = o.RootCAs
	case f != "":
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("SSL_CERT_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("SSL_CERT_FILE %s: no PEM certificates", quote.String(f))
		}
		tlsConf.RootCAs = pool
	case o.Trust != nil:
		// Never Go's own loading, which reads SSL_CERT_FILE and
		// SSL_CERT_DIR from the environment unchecked.
		pool, err := systemRoots(o.Trust, logf)
		if err != nil {
			return nil, err
		}
		tlsConf.RootCAs = pool
	}
	tlsConf.InsecureSkipVerify = o.Insecure
	proxy := http.ProxyFromEnvironment
	if o.Proxy != nil {
		proxy = o.Proxy
	}
	tr := &http.Transport{
		Proxy:                 proxy,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Resolver: o.Resolver}).DialContext,
		TLSClientConfig:       tlsConf,
		TLSHandshakeTimeout:   20 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	var rt http.RoundTripper = tr
	if o.Authorization != nil {
		rt = &authTransport{rt: tr, auth: o.Authorization}
	}
	c := &Client{
		http: &http.Client{
			Transport: rt,
			CheckRedirect: func(req *http.Request, via []*http.Request) error {
				if req.URL.Scheme != "https" {
					return &policyError{fmt.Sprintf("refusing redirect to %s: not https", quote.String(req.URL.Redacted()))}
				}
				if len(via) >= 10 {
					return errors.New("too many redirects")
				}
				return nil
			},
		},
		retries: o.Retries,
		backoff: o.Backoff,
		idle:    o.Idle,
		logf:    o.Logf,
	}
	if c.retries == 0 {
		c.retries = 4
	}
	if c.backoff == 0 {
		c.backoff = time.Second
	}
	if c.idle == 0 {
		c.idle = 60 * time.Second
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	return c, nil
}

// SystemBundles are the CA bundles Go's crypto/x509 looks for on Linux, in
// its order.
var SystemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine
}

// systemRoots reads the first system bundle that trust passes and that
// holds a certificate.
func systemRoots(trust func(what, path string) error, logf func(string, ...any)) (*x509.CertPool, error) {
	for _, f := range SystemBundles {
		if _, err := os.Stat(f); err != nil {
			continue
		}
		if err := trust("CA bundle", f); err != nil {
			logf("%v; skipped", err)
			continue
		}
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if pool.AppendCertsFromPEM(pem) {
			return pool, nil
		}
	}
	return nil, fmt.Errorf("no CA bundle that root can trust (%s): install ca-certificates or set SSL_CERT_FILE to a root-owned file", strings.Join(SystemBundles, ", "))
}

// authTransport sets the Authorization header of each request, redirects
// included, from the request's own URL.
type authTransport struct {
	rt   http.RoundTripper
	auth func(*url.URL) string
}

func (a *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if v := a.auth(req.URL); v != "" {
		req.Header.Set("Authorization", v)
	} else {
		req.Header.Del("Authorization")
	}
	return a.rt.RoundTrip(req)
}

// policyError is a refusal of ours, not a network failure.
type policyError struct{ msg string }

func (e *policyError) Error() string { return e.msg }

// StatusError is an HTTP response other than success.
type StatusError struct {
	URL    string
	Status string
	Code   int
}

// Error quotes Status: its reason phrase is the server's text.
func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %s", quote.String(e.URL), quote.String(e.Status))
}

// NotFoundError is a host name that does not resolve (NXDOMAIN, or no
// such name in /etc/hosts and DNS): not retried.
type NotFoundError struct {
	URL, Host string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("GET %s: lookup %s: no such host (not retried: the name does not resolve on this network)", quote.String(e.URL), quote.String(e.Host))
}

// retryable reports whether a status may go away by itself.
func retryable(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// Get fetches url into memory, failing if the body exceeds limit bytes.
func (c *Client) Get(ctx context.Context, url string, limit int64, h http.Header) ([]byte, error) {
	b, err := c.Open(ctx, url, h)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	data, err := io.ReadAll(io.LimitReader(b, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("GET %s: response larger than %d bytes", url, limit)
	}
	return data, nil
}

// Open starts fetching url and returns its body. Reading the body resumes
// the transfer where it was cut, with a Range request if the server honours
// it for the same file (If-Range), else by fetching again and skipping what
// was read.
func (c *Client) Open(ctx context.Context, rawURL string, h http.Header) (*Body, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("bad URL %q: %w", rawURL, err)
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("refusing %s: not https", u.Redacted())
	}
	b := &Body{c: c, ctx: ctx, url: u.String(), header: h, size: -1}
	if err := b.connect(0); err != nil {
		return nil, err
	}
	return b, nil
}

// Body is a response body that resumes when cut.
type Body struct {
	c        *Client
	ctx      context.Context
	url      string
	header   http.Header
	resp     *http.Response
	cancel   context.CancelFunc
	timer    *time.Timer
	off      int64 // bytes delivered to the reader
	size     int64 // total size, -1 if unknown
	validate string
	resumes  int
	cut      error // why the current response ended early
}

// Size is the length of the whole body, or -1 if the server did not say.
func (b *Body) Size() int64 { return b.size }

// Read implements io.Reader.
func (b *Body) Read(p []byte) (int, error) {
	for {
		if b.resp == nil {
			return 0, io.ErrClosedPipe
		}
		if b.cut == nil {
			b.timer.Reset(b.c.idle)
			n, err := b.resp.Body.Read(p)
			b.off += int64(n)
			if err == io.EOF && (b.size < 0 || b.off >= b.size) {
				return n, io.EOF
			}
			if err == nil {
				return n, nil
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			b.cut = err
			if n > 0 {
				return n, nil
			}
		}
		if b.ctx.Err() != nil {
			return 0, b.ctx.Err()
		}
		if b.resumes >= b.c.retries {
			return 0, fmt.Errorf("GET %s: body cut after %d of %s bytes: %w (gave up after %d resumes)", quote.String(b.url), b.off, sizeString(b.size), b.cut, b.resumes)
		}
		b.resumes++
		b.c.logf("GET %s: cut after %d bytes (%v); resuming", quote.String(b.url), b.off, b.cut)
		b.closeResp()
		if err := b.c.sleep(b.ctx, b.resumes); err != nil {
			return 0, err
		}
		if err := b.connect(b.off); err != nil {
			return 0, err
		}
		b.cut = nil
	}
}

func sizeString(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return strconv.FormatInt(n, 10)
}

// Close releases the connection.
func (b *Body) Close() error {
	b.closeResp()
	return nil
}

func (b *Body) closeResp() {
	if b.resp != nil {
		b.resp.Body.Close()
		b.resp = nil
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	if b.cancel != nil {
		b.cancel()
	}
}

func (c *Client) sleep(ctx context.Context, attempt int) error {
	d := c.backoff << (attempt - 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// connect requests the body from offset off, retrying transient failures.
func (b *Body) connect(off int64) error {
	var last error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if attempt > b.c.retries {
				return fmt.Errorf("%w (after %d attempts)", last, attempt)
			}
			b.c.logf("%v; retrying", last)
			if err := b.c.sleep(b.ctx, attempt); err != nil {
				return err
			}
		}
		err, retry := b.try(off)
		if err == nil {
			return nil
		}
		if !retry || b.ctx.Err() != nil {
			return err
		}
		last = err
	}
}

func (b *Body) try(off int64) (err error, retry bool) {
	ctx, cancel := context.WithCancel(b.ctx)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url, nil)
	if err != nil {
		cancel()
		return err, false
	}
	for k, v := range b.header {
		req.Header[k] = v
	}
	if off > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", off))
		if b.validate != "" {
			req.Header.Set("If-Range", b.validate)
		}
	}
	timer := time.AfterFunc(b.c.idle, cancel)
	resp, err := b.c.http.Do(req)
	if err != nil {
		timer.Stop()
		cancel()
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		// A name that does not exist will not exist in a second either.
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			return &NotFoundError{URL: b.url, Host: de.Name}, false
		}
		// A certificate that does not verify will not verify next time,
		// nor will a redirect we refuse.
		var cve *tls.CertificateVerificationError
		var pe *policyError
		return fmt.Errorf("GET %s: %w", quote.String(b.url), err), !errors.As(err, &cve) && !errors.As(err, &pe)
	}
	fail := func(err error, retry bool) (error, bool) {
		timer.Stop()
		resp.Body.Close()
		cancel()
		return err, retry
	}
	switch {
	case off > 0 && resp.StatusCode == http.StatusPartialContent:
		start, total, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != off || (b.size >= 0 && total >= 0 && total != b.size) {
			return fail(fmt.Errorf("GET %s: bad Content-Range %q resuming at %d", quote.String(b.url), resp.Header.Get("Content-Range"), off), false)
		}
	case resp.StatusCode == http.StatusOK:
		if off > 0 {
			// No range support, or the file changed (If-Range): start
			// over and skip what the reader already has. A changed file
			// fails the caller's checksum.
			if resp.ContentLength >= 0 && b.size >= 0 && resp.ContentLength != b.size {
				return fail(fmt.Errorf("GET %s: size changed from %d to %d while downloading", quote.String(b.url), b.size, resp.ContentLength), false)
			}
			if _, err := io.CopyN(io.Discard, resp.Body, off); err != nil {
				return fail(fmt.Errorf("GET %s: restarting: %w", quote.String(b.url), err), true)
			}
		} else {
			b.size = resp.ContentLength
			if et := resp.Header.Get("ETag"); et != "" && !strings.HasPrefix(et, "W/") {
				b.validate = et
			} else if lm := resp.Header.Get("Last-Modified"); lm != "" {
				b.validate = lm
			}
		}
	default:
		se := &StatusError{URL: b.url, Status: resp.Status, Code: resp.StatusCode}
		return fail(se, retryable(resp.StatusCode))
	}
	b.resp, b.cancel, b.timer = resp, cancel, timer
	return nil, false
}

// contentRange parses "bytes START-END/TOTAL" (TOTAL may be *, reported as -1).
func contentRange(s string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	first, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, total, true
}
