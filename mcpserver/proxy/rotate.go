package proxy

import (
	"fmt"
	"os"
	"sync"
)

// RotatingFile is a log file kept under a size: when a write would take it
// past its bound, it is renamed to its name with ".1" (replacing the older
// one) and started again, so the log never holds more than twice the bound.
// Writes are appended whole, so a line written in one Write stays in one
// file. It is safe for concurrent use, as the [Options.Stderr] of several
// servers.
type RotatingFile struct {
	path string
	max  int64

	mu   sync.Mutex
	f    *os.File // nil once closed, or when reopening failed
	size int64
}

// OpenRotatingFile opens path for appending, creating it if need be, to be
// rotated past max bytes.
func OpenRotatingFile(path string, max int64) (*RotatingFile, error) {
	r := &RotatingFile{path: path, max: max}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	r.f, r.size = f, fi.Size()
	return r, nil
}

func (r *RotatingFile) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f != nil && r.size > 0 && r.size+int64(len(b)) > r.max {
		r.rotate()
	}
	if r.f == nil {
		return 0, fmt.Errorf("write %s: the log is closed (its rotation failed, or Close was called)", r.path)
	}
	n, err := r.f.Write(b)
	r.size += int64(n)
	return n, err
}

// rotate moves the file to path.1 and starts an empty one. Were the rename
// to fail, the file is emptied all the same: the bound holds.
func (r *RotatingFile) rotate() {
	r.f.Close()
	_ = os.Rename(r.path, r.path+".1") // emptied below either way
	r.f, r.size = nil, 0
	if f, err := os.OpenFile(r.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o600); err == nil {
		r.f = f
	}
}

// Close closes the file; later writes fail.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
