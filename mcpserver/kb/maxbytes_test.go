package kb

import (
	"testing"

	"github.com/agentctl/agentctl/mcpserver/mount"
)

// TestMaxBytesLimitsAgree: the knowledge base's largest MaxBytes and the
// mount's (which checks records and flags before a knowledge base opens)
// are one limit, kept in two leaf packages that do not import each other.
func TestMaxBytesLimitsAgree(t *testing.T) {
	if MaxMaxBytes != mount.MaxBytesLimit {
		t.Errorf("kb.MaxMaxBytes %d != mount.MaxBytesLimit %d", MaxMaxBytes, mount.MaxBytesLimit)
	}
	if _, err := Open("k", t.TempDir(), Options{MaxBytes: MaxMaxBytes + 1, IndexDir: t.TempDir()}); err == nil {
		t.Error("Open took MaxBytes over the limit")
	}
}
