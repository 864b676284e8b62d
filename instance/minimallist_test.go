package instance

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"testing"
)

// TestMinimalListIsTheStores: testdata/minimallist, the floor the listing's
// benchmark is compared with, opens the state database with the store's
// settings, checks its schema version and runs the listing's query: its
// constants are the store's, so that the floor does what the listing
// cannot avoid, and no more or less.
func TestMinimalListIsTheStores(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join("..", "testdata", "minimallist", "main.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]constant.Value{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			var tv types.TypeAndValue
			if tv, err = types.Eval(fset, nil, vs.Pos(), types.ExprString(vs.Values[0])); err != nil {
				t.Fatalf("%s: %v", vs.Names[0].Name, err)
			}
			consts[vs.Names[0].Name] = tv.Value
		}
	}
	q, args := listQuery(ListOptions{Limit: 50})
	for name, want := range map[string]constant.Value{
		"dsnParams":     constant.MakeString(dsnParams()),
		"schemaVersion": constant.MakeInt64(int64(len(sqliteMigrations))),
		"query":         constant.MakeString(q),
	} {
		if got, ok := consts[name]; !ok || !constant.Compare(got, token.EQL, want) {
			t.Errorf("minimallist's %s = %v, want the store's %v", name, got, want)
		}
	}
	if len(args) != 1 || args[0] != 50 {
		t.Errorf("the listing's arguments %v, want [50] as minimallist passes", args)
	}
}
