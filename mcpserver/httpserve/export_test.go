package httpserve

// Calls returns the number of MCP requests being handled.
func (h *Handler) Calls() int { return int(h.calls.Load()) }
