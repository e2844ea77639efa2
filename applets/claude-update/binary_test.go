package claudeupdate

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-sandbox/claude-sandbox/internal/release"
	"github.com/claude-sandbox/claude-sandbox/internal/testutil"
)

// runBinary runs the built claude-update with env and returns its exit
// code, stdout and stderr.
func runBinary(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	link := testutil.Link(t, t.TempDir(), "claude-update")
	cmd := exec.Command(link, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}, env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

func TestBinaryExitCodes(t *testing.T) {
	dir := filepath.Join(testutil.RootOwnedDir(t), "bin")
	env := []string{"CLAUDE_SBX_BINDIR=" + dir}
	tests := []struct {
		name      string
		args      []string
		code      int
		out, err  string
		outPrefix bool
	}{
		{name: "help", args: []string{"--help"}, code: 0, out: "Usage: claude-update [<channel|version>] [flags]\n", outPrefix: true},
		{name: "usage error", args: []string{"--bogus"}, code: 2, err: "claude-update: unknown flag --bogus (see --help)\n"},
		{name: "bad version", args: []string{"2.1"}, code: 2, err: "claude-update: \"2.1\" is neither a channel (latest, stable) nor a version like 2.1.197\n"},
		{name: "list empty", args: []string{"--list"}, code: 0, out: "no versions installed in " + dir + "\n"},
		{name: "rollback empty", args: []string{"--rollback"}, code: 1, err: "claude-update: nothing is installed in " + dir + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runBinary(t, env, tt.args...)
			okOut := out == tt.out || tt.outPrefix && strings.HasPrefix(out, tt.out)
			if code != tt.code || !okOut || errOut != tt.err {
				t.Errorf("claude-update %q = %d, %q, %q; want %d, %q, %q", tt.args, code, out, errOut, tt.code, tt.out, tt.err)
			}
		})
	}
}

// officialLookalike serves the fixture's files as https://downloads.claude.ai
// (or the hosts given), with a certificate from a CA the test writes to a
// root-owned file, reached through an HTTP CONNECT proxy that sends every
// tunnel to it. It returns the CA file, the proxy URL and the hosts the
// proxy was asked for.
func officialLookalike(t *testing.T, f *fixture, names ...string) (caFile, proxyURL string, hosts func() []string) {
	if len(names) == 0 {
		names = []string{"downloads.claude.ai"}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test CA for " + names[0]},
		DNSNames:              names,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(testutil.RootOwnedDir(t), "ca.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	proxyURL, hosts = connectProxy(t, func(string) string { return srv.Listener.Addr().String() })
	return caFile, proxyURL, hosts
}

// TestBinaryThroughProxy runs the shipped binary, whose release base and
// key pin are the official ones, through HTTPS_PROXY to a look-alike server
// signed with a test key: the proxy and SSL_CERT_FILE are honoured, and the
// pin rejects the test key.
func TestBinaryThroughProxy(t *testing.T) {
	f := newFixture(t)
	f.release("2.1.100")
	f.channel("latest", "2.1.100\n")
	caFile, proxyURL, hosts := officialLookalike(t, f)
	dir := filepath.Join(testutil.RootOwnedDir(t), "bin")
	env := []string{"CLAUDE_SBX_BINDIR=" + dir, "HTTPS_PROXY=" + proxyURL, "SSL_CERT_FILE=" + caFile}

	code, out, errOut := runBinary(t, env, "--check")
	if want := "latest is 2.1.100; nothing is installed in " + dir + "\n"; code != 100 || out != want || errOut != "" {
		t.Errorf("--check = %d, %q, %q; want 100, %q", code, out, errOut, want)
	}
	if h := hosts(); len(h) == 0 || h[0] != "downloads.claude.ai:443" {
		t.Errorf("proxy saw %q, want downloads.claude.ai:443", h)
	}

	code, out, errOut = runBinary(t, env)
	want := "claude-update: " + release.KeyURL + ": signing key fingerprint mismatch: got " + f.fp + ", want " + release.Fingerprint + "\n"
	if code != 1 || errOut != want {
		t.Errorf("install = %d, %q, %q; want 1, %q", code, out, errOut, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "claude")); !os.IsNotExist(err) {
		t.Errorf("claude symlink exists after a rejected key: %v", err)
	}

	// Without the CA, the look-alike's certificate is refused at once.
	code, _, errOut = runBinary(t, []string{"CLAUDE_SBX_BINDIR=" + dir, "HTTPS_PROXY=" + proxyURL, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}, "--check")
	want = "claude-update: GET " + release.Base + "/latest: tls: failed to verify certificate: x509: certificate signed by unknown authority\n"
	if code != 1 || errOut != want {
		t.Errorf("untrusted certificate = %d, %q; want 1, %q", code, errOut, want)
	}
}
