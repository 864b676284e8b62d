package mcpserver

// Progress statuses: the values report_progress_<S> accepts (its input
// schema's enum) and that `agentctl instance wait --status` waits for. The
// endpoint owns them, because the tool defines them; the store keeps an
// event's status as the tool gave it.
const (
	StatusRunning = "running"
	StatusBlocked = "blocked"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// ProgressStatuses returns the valid progress statuses, in the order the
// tool's schema lists them.
func ProgressStatuses() []string {
	return []string{StatusRunning, StatusBlocked, StatusDone, StatusFailed}
}
