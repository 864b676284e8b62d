package agents

import (
	"os"
	"path"
	"path/filepath"
	"reflect"
	"testing"
)

// TestCatalogGenerated: catalog_gen.go holds exactly what Decode makes of
// catalog/*.toml, field for field; after editing the catalog, run
// `go generate ./agents`.
func TestCatalogGenerated(t *testing.T) {
	files, err := filepath.Glob("catalog/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no catalog files: %v", err)
	}
	gen := map[string]*Definition{}
	for _, d := range catalogDefinitions() {
		gen[d.ID] = d
	}
	if len(gen) != len(files) {
		t.Errorf("catalog_gen.go has %d definitions, catalog/ has %d files: run go generate ./agents", len(gen), len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := Decode(path.Join("catalog", filepath.Base(f)), data)
		if err != nil {
			t.Fatal(err)
		}
		d.Source = SourceCatalog
		if !reflect.DeepEqual(d, gen[d.ID]) {
			t.Errorf("%s: catalog_gen.go differs from what Decode makes of it: run go generate ./agents\n got %#v\nwant %#v", f, gen[d.ID], d)
		}
	}
	// Each call makes new values: a caller may change its definitions.
	a, b := catalogDefinitions(), catalogDefinitions()
	a[0].Run.ConfigArgs = append(a[0].Run.ConfigArgs, "changed")
	a[0].Name = "changed"
	if reflect.DeepEqual(a[0], b[0]) {
		t.Error("catalogDefinitions returned shared values")
	}
}
