package claude

import (
	"io"
	"testing"
)

var errEOF = io.EOF

func TestLocalRepo(t *testing.T) {
	for _, tt := range []struct {
		url, path string
		local     bool
	}{
		{"/srv/git/p.git", "/srv/git/p.git", true},
		{"file:///srv/git/p.git", "/srv/git/p.git", true},
		{"../p.git", "../p.git", true},
		{"./a:b", "./a:b", true},
		{"git@github.com:u/p.git", "", false},
		{"host:p.git", "", false},
		{"ssh://host/p.git", "", false},
		{"https://host/p.git", "", false},
		{"ext::sh -c x", "", false},
	} {
		if p, ok := localRepo(tt.url); p != tt.path || ok != tt.local {
			t.Errorf("localRepo(%q) = %q, %v; want %q, %v", tt.url, p, ok, tt.path, tt.local)
		}
	}
}

func TestReadHeader(t *testing.T) {
	for _, tt := range []struct{ in, remote, err string }{
		{"push origin\n0000", "origin", ""},
		{"push \n", "", "the push did not name its remote"},
		{"pull origin\n", "", "the push did not name its remote"},
		{"push origin", "", "the push did not name its remote"},
		{"push " + string(make([]byte, 200)), "", "the push's first line is too long"},
	} {
		r := &stringsReader{s: tt.in}
		remote, err := readHeader(r)
		if remote != tt.remote || (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) {
			t.Errorf("readHeader(%q) = %q, %v; want %q, %s", tt.in, remote, err, tt.remote, tt.err)
		}
		if tt.remote != "" && r.s[r.i:] != "0000" {
			t.Errorf("readHeader(%q) read past its line: %q left", tt.in, r.s[r.i:])
		}
	}
}

type stringsReader struct {
	s string
	i int
}

func (r *stringsReader) Read(p []byte) (int, error) {
	if r.i >= len(r.s) {
		return 0, errEOF
	}
	n := copy(p, r.s[r.i:])
	r.i += n
	return n, nil
}
