package netnsenter

import "testing"

func TestCheckDir(t *testing.T) {
	tests := []struct {
		name string
		fi   fileInfo
		want string
	}{
		{"root 0755", fileInfo{Mode: sIFDIR | 0o755}, ""},
		{"root group 0 0755", fileInfo{Mode: sIFDIR | 0o755, Gid: 0}, ""},
		{"symlink", fileInfo{Mode: sIFLNK | 0o777}, "directory /d is a symlink: use a path without symlinks"},
		{"file", fileInfo{Mode: sIFREG | 0o755}, "/d is not a directory"},
		{"user-owned", fileInfo{Mode: sIFDIR | 0o755, Uid: 1000}, "directory /d is owned by uid 1000, not root: chown root:root /d"},
		{"group-writable", fileInfo{Mode: sIFDIR | 0o775, Gid: 50}, "directory /d is writable by group 50: chmod g-w /d"},
		{"group-writable gid 0", fileInfo{Mode: sIFDIR | 0o775}, "directory /d is writable by group 0: chmod g-w /d"},
		{"world-writable", fileInfo{Mode: sIFDIR | 0o757}, "directory /d is writable by others: chmod o-w /d"},
		{"sticky tmp", fileInfo{Mode: sIFDIR | 0o1777}, "directory /d is writable by group 0: chmod g-w /d"},
		{"sticky o+w", fileInfo{Mode: sIFDIR | 0o1757}, "directory /d is writable by others: chmod o-w /d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkDir("/d", tt.fi)
			if got := errString(err); got != tt.want {
				t.Errorf("checkDir(/d, %+v) = %q, want %q", tt.fi, got, tt.want)
			}
		})
	}
}

func TestCheckFile(t *testing.T) {
	tests := []struct {
		name string
		fi   fileInfo
		want string
	}{
		{"root 0644", fileInfo{Mode: sIFREG | 0o644, Size: 7}, ""},
		{"root 0664 group 0", fileInfo{Mode: sIFREG | 0o664}, ""},
		{"max size", fileInfo{Mode: sIFREG | 0o644, Size: 100}, ""},
		{"symlink", fileInfo{Mode: sIFLNK | 0o777}, "is a symlink: replace it with a regular file"},
		{"fifo", fileInfo{Mode: 0o010000 | 0o644}, "is not a regular file"},
		{"dir", fileInfo{Mode: sIFDIR | 0o755}, "is not a regular file"},
		{"user-owned", fileInfo{Mode: sIFREG | 0o644, Uid: 1001, Gid: 1001}, "is owned by uid 1001, not root: chown root:root /f"},
		{"group-writable", fileInfo{Mode: sIFREG | 0o664, Gid: 1001}, "is writable by group 1001: chmod g-w /f"},
		{"world-writable", fileInfo{Mode: sIFREG | 0o646}, "is writable by others: chmod o-w /f"},
		{"huge", fileInfo{Mode: sIFREG | 0o644, Size: 101}, "is larger than 100 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkFile("/f", tt.fi, 100)
			if got := errString(err); got != tt.want {
				t.Errorf("checkFile(/f, %+v) = %q, want %q", tt.fi, got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
