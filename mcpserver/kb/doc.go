// Package kb holds knowledge bases: folders of Markdown documents,
// "concepts", that can be listed, read, searched and written by id.
//
// The shortest use:
//
//	base, err := kb.Open("docs", dir, kb.Options{IndexDir: stateDir + "/kb"})
//	defer base.Close()
//	page, err := base.List(ctx, "guides/", "", 0)   // ids and titles, sorted
//	c, err := base.Read(ctx, "guides/setup")         // the Markdown of guides/setup.md
//	hits, err := base.Search(ctx, "install binary", 10)
//	w, err := base.Write(ctx, "guides/new", "# New\n")
//
// A concept's id is its path in the folder without ".md" (see
// [CleanConceptID]). Every file access goes through an [os.Root], so nothing
// outside the folder is read or written; writes are atomic; search ranks by
// BM25 over a persistent SQLite FTS5 index, one per folder under
// [Options.IndexDir], shared by every process that mounts the folder,
// reconciled with the folder incrementally and updated by every write (see
// [Base.Search] and [Base.Index]). A refused operation returns an [*Error] whose
// message says what to do instead; [errors.Is] tells its kind
// ([ErrConceptNotFound], [ErrInvalidConceptID] and the others).
//
// The output types ([ListOutput], [ReadOutput], [SearchOutput], [WriteOutput])
// are also the structured results of the MCP tools that
// [github.com/agentctl/agentctl/mcpserver.RegisterKBTools] serves, so their
// JSON is part of that contract. This package imports nothing else of
// agentctl's.
package kb
