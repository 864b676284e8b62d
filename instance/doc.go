// Package instance holds agent instances: the durable record that carries a
// client's capabilities, the SQLite store that keeps records, questions and
// progress events, and the writers of each client's native MCP configuration.
//
// The shortest use:
//
//	st, err := instance.Open(ctx, stateDir)
//	defer st.Close()
//	rec, err := st.CreateInstance(ctx, instance.CreateOptions{Definition: def, Workspace: ws, Executable: exe})
//	rec, err = st.Get(ctx, rec.ID[:6]) // an id, a unique id prefix, or the label
//
// Every consumer reads the capability from the [Record], never from the agent
// definition, so editing a definition later changes no existing instance.
package instance
