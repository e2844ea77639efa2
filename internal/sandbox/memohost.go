package sandbox

import "io/fs"

// memoHost is a Host that remembers what Lstat and Readlink said of each
// path, for one check that resolves many links through the same
// directories (every program of /usr/bin through /etc/alternatives into
// /usr/lib): each hop lstats every component again. The plan is made of
// facts read once; the binds are checked again on their fds.
type memoHost struct {
	Host
	lstat map[string]memoStat
	link  map[string]memoLink
}

type memoStat struct {
	fi  fs.FileInfo
	err error
}

type memoLink struct {
	target string
	err    error
}

func newMemoHost(h Host) *memoHost {
	return &memoHost{Host: h, lstat: map[string]memoStat{}, link: map[string]memoLink{}}
}

func (m *memoHost) Lstat(p string) (fs.FileInfo, error) {
	if r, ok := m.lstat[p]; ok {
		return r.fi, r.err
	}
	fi, err := m.Host.Lstat(p)
	m.lstat[p] = memoStat{fi, err}
	return fi, err
}

func (m *memoHost) Readlink(p string) (string, error) {
	if r, ok := m.link[p]; ok {
		return r.target, r.err
	}
	t, err := m.Host.Readlink(p)
	m.link[p] = memoLink{t, err}
	return t, err
}
