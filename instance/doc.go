// Package instance holds agent instances: the durable record that carries a
// client's capabilities, the store that keeps records, tokens, questions,
// progress events, runs and run logs, and the writers of each client's
// native MCP configuration. The store writes its SQL once over a backend:
// SQLite in the state directory (the default), or PostgreSQL, which many
// hosts and daemons share ([WithStore] with a postgres:// [StoreURL]).
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
//
// An endpoint holds its instance's serve lock while it serves
// ([Store.ServeLock]; the lock goes when the process ends, however it ends).
// On Unix, where the locks are tracked, [Store.Live] then reports the
// instance as served, and [Store.DeleteInstance] refuses it (a
// [*ServedError], matching [ErrConflict]) unless [DeleteOptions.Force] is
// set; a forced delete goes ahead, and the endpoint's store calls then fail
// with an error matching [ErrDeleted], so that its tools say so.
//
//	release, err := st.ServeLock(ctx, rec.ID) // the endpoint, while it serves
//	defer release()
//	_, err = st.DeleteInstance(ctx, ref, instance.DeleteOptions{Force: true})
package instance
