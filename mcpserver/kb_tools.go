package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentctl/agentctl/mcpserver/kb"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Base names of a knowledge base's tools.
const (
	BaseConceptList   = "concept_list"
	BaseConceptRead   = "concept_read"
	BaseConceptSearch = "concept_search"
	BaseConceptWrite  = "concept_write"
)

// ConceptListInput is the input of concept_list.
type ConceptListInput struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"Only concepts whose id starts with this, e.g. \"guides/\" for the folder guides. Leave out for all concepts."`
	Cursor string `json:"cursor,omitempty" jsonschema:"The next_cursor of the previous page, unchanged. Leave out for the first page."`
	Limit  int    `json:"limit,omitempty" jsonschema:"How many concepts to return at most (1 to 1000, default 100)."`
}

// ConceptReadInput is the input of concept_read.
type ConceptReadInput struct {
	ID string `json:"id" jsonschema:"The concept's id, e.g. \"guides/setup\": its path in the knowledge base without \".md\", as concept_list and concept_search return it."`
}

// ConceptSearchInput is the input of concept_search.
type ConceptSearchInput struct {
	Query string `json:"query" jsonschema:"A few distinctive keywords (not a question): a concept matching any of them is found, stemmed (deploy finds deploying); quotes, *, AND, OR, NOT and NEAR are plain words, not operators. Of more than 64 different words the 64 rarest are searched for (ignored lists the others)."`
	Limit int    `json:"limit,omitempty" jsonschema:"How many results to return at most (1 to 50, default 10)."`
}

// ConceptWriteInput is the input of concept_write.
type ConceptWriteInput struct {
	ID        string `json:"id" jsonschema:"The concept's id: its path in the knowledge base without \".md\", with \"/\" between folders, e.g. \"guides/setup\"."`
	Content   string `json:"content" jsonschema:"The complete Markdown of the concept; it replaces what was there."`
	IfVersion string `json:"if_version,omitempty" jsonschema:"For an edit: the version the read of the concept gave. The write is refused if the concept changed since, so that nobody's change is lost."`
}

// KBToolBases lists the base tool names a knowledge base offers with these
// options, in a stable order: concept_list, concept_read, concept_search,
// and concept_write unless read-only.
func KBToolBases(readOnly bool) []string {
	if readOnly {
		return []string{BaseConceptList, BaseConceptRead, BaseConceptSearch}
	}
	return []string{BaseConceptList, BaseConceptRead, BaseConceptSearch, BaseConceptWrite}
}

// RegisterKBTools registers kbase's tools in r. name(base) returns the
// canonical name for a base name: the caller applies the mount prefix
// ("docs__concept_read", or the bare "concept_read"). Each [Entry] has
// Source "kb <name>", Kind [KindKB], Mount kbase.Name(), Prefix prefix and
// Base base. Nothing is registered when any name is invalid or taken.
func RegisterKBTools(r *Registry, kbase *kb.Base, prefix string, name func(base string) string) error {
	bases := KBToolBases(kbase.Options().ReadOnly)
	source := "kb " + kbase.Name()
	entry := func(base string) Entry {
		return Entry{Name: name(base), Source: source, Kind: KindKB, Mount: kbase.Name(), Prefix: prefix, Base: base}
	}
	for _, b := range bases {
		e := entry(b)
		if err := ValidateToolName(e.Name); err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		if prev, ok := r.Lookup(e.Name); ok {
			return newCollision(e.Name, &prev, &e)
		}
	}
	t, err := kbTools(kbase, name)
	if err != nil {
		return err
	}
	if err := AddTool(r, entry(BaseConceptList), t.list, kbList(kbase)); err != nil {
		return err
	}
	if err := AddTool(r, entry(BaseConceptRead), t.read, kbRead(kbase)); err != nil {
		return err
	}
	if err := AddTool(r, entry(BaseConceptSearch), t.search, kbSearch(kbase)); err != nil {
		return err
	}
	if t.write == nil {
		return nil
	}
	return AddTool(r, entry(BaseConceptWrite), t.write, kbWrite(kbase))
}

type kbToolDefs struct {
	list, read, search, write *mcp.Tool
}

// kbTools defines a knowledge base's tools; write is nil for a read-only
// mount. Descriptions name the knowledge base and the sibling tools by their
// canonical names.
func kbTools(kbase *kb.Base, name func(string) string) (kbToolDefs, error) {
	list, read, search, write := name(BaseConceptList), name(BaseConceptRead), name(BaseConceptSearch), name(BaseConceptWrite)
	const idIs = `A concept id is the concept's path in the knowledge base without ".md", with "/" between folders, e.g. "guides/setup".`
	q := fmt.Sprintf("%q", kbase.Name())

	listSchema, err := jsonschema.For[ConceptListInput](nil)
	if err != nil {
		return kbToolDefs{}, err
	}
	// No "default" keywords: go-sdk v1.8.0 panics applying defaults to
	// arguments sent as JSON null. The descriptions give the defaults.
	lim := listSchema.Properties["limit"]
	lim.Minimum, lim.Maximum = ptr(1.0), ptr(float64(kb.MaxListLimit))

	searchSchema, err := jsonschema.For[ConceptSearchInput](nil)
	if err != nil {
		return kbToolDefs{}, err
	}
	lim = searchSchema.Properties["limit"]
	lim.Minimum, lim.Maximum = ptr(1.0), ptr(float64(kb.MaxSearchLimit))

	d := kbToolDefs{
		list: &mcp.Tool{
			Name:  list,
			Title: "List concepts in " + kbase.Name(),
			Description: "List the concepts (Markdown documents) in the knowledge base " + q + ", sorted by id, with their titles, " +
				"a page at a time. " + idIs + " Narrow the listing with prefix (\"guides/\" lists that folder); when the result has " +
				"next_cursor, pass it as cursor for the next page. To find concepts about a topic, " + search + " is faster; read one with " + read + ".",
			InputSchema: listSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
		},
		read: &mcp.Tool{
			Name:  read,
			Title: "Read a concept in " + kbase.Name(),
			Description: "Read one concept (a Markdown document) of the knowledge base " + q + ": its complete Markdown and its title. " +
				idIs + " Get ids from " + list + " or " + search + ".",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
		},
		search: &mcp.Tool{
			Name:  search,
			Title: "Search concepts in " + kbase.Name(),
			Description: "Search the knowledge base " + q + " for concepts (Markdown documents) by keywords. Results are ranked by relevance " +
				"(matches in a title count more) and give each concept's id, title, a short snippet around the best match and its score " +
				"(BM25, higher is better, 4 significant digits; equal scores in id order); read a " +
				"result in full with " + read + ". Use a few distinctive words rather than a sentence; every word is optional, " +
				"concepts that match more of them rank higher.",
			InputSchema: searchSchema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)},
		},
	}
	if !kbase.Options().ReadOnly {
		d.write = &mcp.Tool{
			Name:  write,
			Title: "Write a concept in " + kbase.Name(),
			Description: "Create or replace a concept (a Markdown document) in the knowledge base " + q + ". " + idIs +
				" Missing folders are created. content replaces the whole concept: to change one, read it with " + read +
				" first and write back the complete edited Markdown, with the read's version as if_version (if the concept changed since, the write is refused: read it again). Give a new concept a title in YAML front matter " +
				"(\"---\\ntitle: Setup\\n---\\n\") or a first \"# \" heading. " +
				fmt.Sprintf("At most %d bytes.", kbase.Options().MaxBytes),
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
		}
	}
	return d, nil
}

// kbToolResult turns a knowledge-base error into a tool error the model can
// act on. Only a cancelled call stays an error of the call itself.
func kbToolResult(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil, err
	}
	return toolError(err.Error()), nil
}

func kbList(kbase *kb.Base) mcp.ToolHandlerFor[ConceptListInput, kb.ListOutput] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in ConceptListInput) (*mcp.CallToolResult, kb.ListOutput, error) {
		out, err := kbase.List(ctx, in.Prefix, in.Cursor, in.Limit)
		if err != nil {
			res, err := kbToolResult(ctx, err)
			return res, kb.ListOutput{Concepts: []kb.ConceptSummary{}}, err
		}
		return nil, out, nil
	}
}

func kbRead(kbase *kb.Base) mcp.ToolHandlerFor[ConceptReadInput, kb.ReadOutput] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in ConceptReadInput) (*mcp.CallToolResult, kb.ReadOutput, error) {
		out, err := kbase.Read(ctx, in.ID)
		if err != nil {
			res, err := kbToolResult(ctx, err)
			return res, kb.ReadOutput{}, err
		}
		// The Markdown itself is the text a model reads best; the structured
		// result carries id and title too.
		return textResult(out.Content), out, nil
	}
}

func kbSearch(kbase *kb.Base) mcp.ToolHandlerFor[ConceptSearchInput, kb.SearchOutput] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in ConceptSearchInput) (*mcp.CallToolResult, kb.SearchOutput, error) {
		out, err := kbase.Search(ctx, in.Query, in.Limit)
		if err != nil {
			res, err := kbToolResult(ctx, err)
			return res, kb.SearchOutput{Results: []kb.SearchResult{}}, err
		}
		return nil, out, nil
	}
}

func kbWrite(kbase *kb.Base) mcp.ToolHandlerFor[ConceptWriteInput, kb.WriteOutput] {
	return func(ctx context.Context, _ *mcp.CallToolRequest, in ConceptWriteInput) (*mcp.CallToolResult, kb.WriteOutput, error) {
		out, err := kbase.WriteIf(ctx, in.ID, in.Content, in.IfVersion)
		if err != nil {
			res, err := kbToolResult(ctx, err)
			return res, kb.WriteOutput{}, err
		}
		verb := "Updated"
		if out.Created {
			verb = "Created"
		}
		return textResult(fmt.Sprintf("%s concept %q in knowledge base %q (%d bytes).", verb, out.ID, kbase.Name(), out.Bytes)), out, nil
	}
}
