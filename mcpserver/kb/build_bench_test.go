package kb

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkKBBuildFloor puts the index build of BenchmarkKBSearch's 10,000
// concepts next to what bounds it from below, in one run:
//
//	go test -run '^$' -bench KBBuildFloor -benchtime 5x ./mcpserver/kb
//
// read_files reads every file once (the floor the issue names).
// fts5_only_porter is FTS5 alone indexing the same texts, already in
// memory, with the index's tokenizer, in one transaction with no journal,
// then the same optimize: no files, no rows, no checks. fts5_only_ascii is
// the same with FTS5's simplest tokenizer (no stemming, no Unicode
// folding), the least any FTS5 index costs. build is Base.Index from
// nothing, which reads the files, checks each, and writes both tables in
// WAL transactions. The whole-process build is BenchmarkKBProcess in
// cmd/agentctl.
func BenchmarkKBBuildFloor(b *testing.B) {
	dir := b.TempDir()
	writeBenchKB(b, dir, benchKBVocabulary())
	var texts [][]byte
	readAll := func() {
		texts = texts[:0]
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				var data []byte
				data, err = os.ReadFile(p)
				texts = append(texts, data)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("read_files", func(b *testing.B) {
		var ds []time.Duration
		for b.Loop() {
			start := time.Now()
			readAll()
			ds = append(ds, time.Since(start))
		}
		reportDurations(b, ds)
	})
	readAll()
	fts5Only := func(b *testing.B, tokenizer string) {
		var ds []time.Duration
		for i := 0; b.Loop(); i++ {
			path := filepath.Join(b.TempDir(), fmt.Sprintf("floor%d.db", i))
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(OFF)&_pragma=synchronous(OFF)")
			if err != nil {
				b.Fatal(err)
			}
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(`CREATE VIRTUAL TABLE fts USING fts5(title, body, content='', contentless_delete=1, tokenize='` + tokenizer + `')`); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			tx, err := db.Begin()
			if err != nil {
				b.Fatal(err)
			}
			st, err := tx.Prepare(`INSERT INTO fts (rowid, title, body) VALUES (?, ?, ?)`)
			if err != nil {
				b.Fatal(err)
			}
			for j, text := range texts {
				title, body := indexedText(text)
				if _, err := st.Exec(j+1, title, body); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			if _, err := db.Exec(`INSERT INTO fts (fts) VALUES ('optimize')`); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
			db.Close()
		}
		reportDurations(b, ds)
	}
	b.Run("fts5_only_porter", func(b *testing.B) { fts5Only(b, "porter unicode61") })
	b.Run("fts5_only_ascii", func(b *testing.B) { fts5Only(b, "ascii") })
	b.Run("build", func(b *testing.B) {
		var ds []time.Duration
		for b.Loop() {
			kb, err := Open("bench", dir, Options{IndexDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			st, err := kb.Index(context.Background(), IndexOptions{})
			ds = append(ds, time.Since(start))
			if err != nil || st.Read != benchKBConcepts {
				b.Fatalf("indexed %d: %v", st.Read, err)
			}
			kb.Close()
		}
		reportDurations(b, ds)
	})
}
