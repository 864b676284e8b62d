package testkit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// SmallFileSystem returns a folder on a tmpfs of size bytes of its own,
// unmounted when the test ends. Mounting needs root (CAP_SYS_ADMIN): else
// the test is skipped, saying so and naming what covers the same without
// it (otherwise).
func SmallFileSystem(tb testing.TB, size int64, otherwise string) string {
	tb.Helper()
	if os.Getuid() != 0 {
		tb.Skipf("mounting a tmpfs of the test's own needs root; %s", otherwise)
	}
	dir := tb.TempDir()
	if err := syscall.Mount("agentctl-test", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		tb.Skipf("mount a tmpfs: %v (%s)", err, otherwise)
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			tb.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Filler is what [Fill] wrote to fill a file system.
type Filler struct {
	big   string
	pages []string // files of a byte, a page each on a tmpfs
}

// Fill writes files into dir until its file system refuses more.
func Fill(tb testing.TB, dir string) *Filler {
	tb.Helper()
	fl := &Filler{big: filepath.Join(dir, "filler")}
	f, err := os.Create(fl.big)
	if err != nil {
		tb.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				tb.Fatal(err)
			}
			break
		}
	}
	f.Close()
	// The last pages, a byte each.
	for i := 0; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("filler-%d", i))
		err := os.WriteFile(p, []byte{1}, 0o600)
		if err != nil {
			os.Remove(p)
			break
		}
		fl.pages = append(fl.pages, p)
	}
	return fl
}

// FreePages frees n pages of what was written (cutting them off its
// largest file): on a tmpfs, room for n pages more.
func (fl *Filler) FreePages(tb testing.TB, n int) {
	tb.Helper()
	fi, err := os.Stat(fl.big)
	if err != nil {
		tb.Fatal(err)
	}
	page := int64(os.Getpagesize())
	pages := (fi.Size() + page - 1) / page
	if pages < int64(n) {
		tb.Fatalf("free %d pages: only %d were written", n, pages)
	}
	if err := os.Truncate(fl.big, (pages-int64(n))*page); err != nil {
		tb.Fatal(err)
	}
}

// Free removes everything written.
func (fl *Filler) Free() {
	os.Remove(fl.big)
	for _, p := range fl.pages {
		os.Remove(p)
	}
	fl.pages = nil
}
