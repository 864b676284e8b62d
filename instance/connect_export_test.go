package instance

// SetConnectHookForTest installs fn as the hook [editConfig] calls after
// an edit ("edited") and just before its rename ("checked"), until the
// returned function removes it.
func SetConnectHookForTest(fn func(stage, path string)) (reset func()) {
	connectHook = fn
	return func() { connectHook = nil }
}
