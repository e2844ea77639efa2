package netpolicy

import (
	"strings"
	"testing"
)

func TestParsePolicyRejects(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"name":"../x","addr":"10.10.0.2","mode":"open","upstream":["127.0.0.53:53"]}`,
		`{"name":"a","addr":"10.10.0.2","mode":"closed","upstream":["127.0.0.53:53"]}`,
		`{"name":"a","addr":"10.10.0.2","mode":"open","upstream":[]}`,
		`not json`,
	} {
		if _, err := ParsePolicy("f", []byte(in)); err == nil || !strings.HasPrefix(err.Error(), "f: ") {
			t.Errorf("ParsePolicy(%s) = %v, want an error naming f", in, err)
		}
	}
}

func TestAllows(t *testing.T) {
	p := Policy{Domains: []PolicyDomain{{Pattern: "a.example"}, {Pattern: "*.b.example"}}}
	for name, want := range map[string]bool{"a.example.": true, "A.EXAMPLE": true, "x.a.example.": false, "x.b.example.": true, "b.example.": false, "xb.example.": false} {
		if got := len(p.Allows(name)) > 0; got != want {
			t.Errorf("Allows(%q) = %v, want %v", name, got, want)
		}
	}
}
