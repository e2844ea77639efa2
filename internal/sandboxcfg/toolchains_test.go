package sandboxcfg

import (
	"reflect"
	"testing"
)

func TestToolchainsDirective(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []string
	}{
		{"toolchains auto\n", []string{"auto"}},
		{"toolchains off\n", []string{"off"}},
		{"toolchains /usr/local/go/bin ~/.cargo/bin/\n", []string{"/usr/local/go/bin", "/home/u/.cargo/bin"}},
		{"toolchains auto ~/tools/bin\n", []string{"auto", "/home/u/tools/bin"}},
	} {
		d, err := Parse([]byte(tt.in), Options{Name: "c", Vars: Vars{Home: "/home/u"}})
		if err != nil {
			t.Errorf("Parse(%q) = %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(d[0].Args, tt.want) {
			t.Errorf("Parse(%q) args = %q, want %q", tt.in, d[0].Args, tt.want)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"toolchains\n", "c:1: toolchains: missing argument: want toolchains auto|off|DIR..."},
		{"toolchains off auto\n", "c:1: toolchains: off stands alone"},
		{"toolchains /x auto\n", "c:1: toolchains: auto must be the first word"},
		{"toolchains bin\n", `c:1: toolchains: "bin" is not an absolute path (start it with /, ~/ or $HOME)`},
	} {
		_, err := Parse([]byte(tt.in), Options{Name: "c"})
		if err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error = %v, want %s", tt.in, err, tt.want)
		}
	}
}
