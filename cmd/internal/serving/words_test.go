package serving_test

import (
	"slices"
	"testing"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

// TestProgressStatusesAreTheRecords: report_progress offers exactly the
// statuses the record knows, in the same order (the first the default).
// The endpoint cannot import the record, so its tool's schema names them
// too; this holds the two together.
func TestProgressStatusesAreTheRecords(t *testing.T) {
	if got, want := mcpserver.ProgressStatuses(), instance.ProgressStatuses(); !slices.Equal(got, want) {
		t.Errorf("report_progress takes %q; the record's statuses are %q", got, want)
	}
	if mcpserver.ProgressStatuses()[0] != instance.StatusRunning {
		t.Errorf("report_progress's default status is %q, want %q", mcpserver.ProgressStatuses()[0], instance.StatusRunning)
	}
}
