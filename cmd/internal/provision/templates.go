package provision

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentctl/agentctl/instance"
	"github.com/agentctl/agentctl/mcpserver"
)

// TemplatesDir, inside an instance directory, keeps the user's instruction
// and skill templates as given, so that a mount change can expand them again
// for the new tool names.
const TemplatesDir = "templates"

// TemplateFile is a template the user gives at create: the file to read and
// where its expansion is written in the instance directory.
type TemplateFile struct {
	Target string // instructions.md or skills/NAME
	File   string // the file given on the command line
}

// TemplateFiles names the targets of an --instructions file and of --skill
// files (skills/ and the file's base name). Two files with one target are an
// error naming both.
func TemplateFiles(instructions string, skills []string) ([]TemplateFile, error) {
	var out []TemplateFile
	if instructions != "" {
		out = append(out, TemplateFile{Target: mcpserver.InstructionsFile, File: instructions})
	}
	for _, s := range skills {
		target := filepath.Join("skills", filepath.Base(s))
		if i := slices.IndexFunc(out, func(t TemplateFile) bool { return t.Target == target }); i >= 0 {
			return nil, fmt.Errorf("%s and %s would both be written as %s; rename one", out[i].File, s, target)
		}
		out = append(out, TemplateFile{Target: target, File: s})
	}
	return out, nil
}

// Template is an instruction or skill template to expand for an instance's
// tools.
type Template struct {
	Target string // where the expansion is written, relative to the instance directory
	Source string // the template text
	Origin string // where the text came from, for error messages
}

// ReadTemplates reads the files of templates given at create.
func ReadTemplates(files []TemplateFile) ([]Template, error) {
	out := make([]Template, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f.File)
		if err != nil {
			return nil, invalid(fmt.Errorf("read %s: %w", f.File, err))
		}
		out = append(out, Template{Target: f.Target, Source: string(data), Origin: f.File})
	}
	return out, nil
}

// KeptTemplates reads the templates kept in an instance's directory (see
// [TemplatesDir]).
func KeptTemplates(rec *instance.Record) ([]Template, error) {
	var out []Template
	for _, f := range rec.Files {
		rel, ok := strings.CutPrefix(f, TemplatesDir+string(filepath.Separator))
		if !ok {
			continue
		}
		origin := filepath.Join(rec.Dir, f)
		data, err := os.ReadFile(origin)
		if err != nil {
			return nil, err
		}
		out = append(out, Template{Target: rel, Source: string(data), Origin: origin})
	}
	return out, nil
}

// RenderFiles returns the files an instance's directory holds for its model,
// for the plan's tools and the record's client: each template expanded
// (placeholders such as {{tool:docs/concept_read}} become the names the
// model calls the tools by) and kept under [TemplatesDir], and a generated
// instructions.md unless a template provides one. An unknown placeholder is
// an error naming the template and the line.
func RenderFiles(rec *instance.Record, plan Toolset, templates []Template) (map[string][]byte, error) {
	files := map[string][]byte{}
	if !slices.ContainsFunc(templates, func(t Template) bool { return t.Target == mcpserver.InstructionsFile }) {
		files[mcpserver.InstructionsFile] = []byte(mcpserver.RenderInstructions(mcpserver.InstructionsInput{
			InstanceID: rec.ID, Agent: rec.Agent, ServerName: rec.ServerName, Naming: rec.Capabilities.ToolNames,
			Mounts: plan.Mounts, Tools: plan.Tools,
		}))
	}
	sorted := slices.SortedFunc(slices.Values(templates), func(a, b Template) int { return strings.Compare(a.Target, b.Target) })
	for _, t := range sorted {
		out, err := mcpserver.ExpandPlaceholders(t.Origin, t.Source, plan.Tools)
		if err != nil {
			return nil, invalid(err)
		}
		files[t.Target] = []byte(out)
		files[filepath.Join(TemplatesDir, t.Target)] = []byte(t.Source)
	}
	return files, nil
}
