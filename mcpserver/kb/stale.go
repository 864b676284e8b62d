package kb

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// isIndexName reports whether name is the file name of an index database
// (see [IndexPath]): 32 lower-case hex digits and ".db". (Not a regular
// expression: one compiled at package init costs every command's start.)
func isIndexName(name string) bool {
	hex, ok := strings.CutSuffix(name, ".db")
	return ok && len(hex) == 32 && strings.Trim(hex, "0123456789abcdef") == ""
}

// RemoveStaleIndexes removes the search indexes under indexDir whose
// folder no longer exists, with their -wal, -shm and lock files, and
// returns the paths of the databases it removed. It leaves an index that
// does not record its folder (one no reconcile of this agentctl, or a
// later one, has completed), one whose folder may exist (Stat fails for
// another reason than its absence), one written within minAge (a process
// may be using it while its folder is away for a moment), and one whose
// lock a process holds. An error stops it; what it removed until then is
// returned with it.
func RemoveStaleIndexes(ctx context.Context, indexDir string, minAge time.Duration) ([]string, error) {
	ents, err := os.ReadDir(indexDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if !e.Type().IsRegular() || !isIndexName(e.Name()) {
			continue
		}
		path := filepath.Join(indexDir, e.Name())
		gone, err := staleIndex(ctx, path, minAge)
		if err != nil {
			return removed, err
		}
		if gone {
			removed = append(removed, path)
		}
	}
	return removed, nil
}

// staleIndex removes the index at path if its folder is gone (see
// [RemoveStaleIndexes]), and reports whether it did.
func staleIndex(ctx context.Context, path string, minAge time.Duration) (bool, error) {
	if !unusedFor(path, minAge) {
		return false, nil
	}
	folder, err := recordedFolder(ctx, path)
	if err != nil || !folderGone(folder) {
		return false, nil // not an index this can read: left alone
	}
	// The lock, if no process holds it (a context already done makes
	// lockFile try once): no reconcile runs while the files go.
	done, cancel := context.WithCancel(ctx)
	cancel()
	unlock, err := lockFile(done, path+".lock", nil)
	if err != nil {
		return false, nil
	}
	defer unlock()
	if !unusedFor(path, minAge) || !folderGone(folder) {
		return false, nil
	}
	if err := removeIndexFiles(path); err != nil {
		return false, err
	}
	if err := os.Remove(path + ".lock"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	return true, nil
}

// unusedFor reports whether the index at path (and its -wal file) was not
// written within d.
func unusedFor(path string, d time.Duration) bool {
	for _, f := range []string{path, path + "-wal"} {
		fi, err := os.Stat(f)
		if err == nil && time.Since(fi.ModTime()) < d {
			return false
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// recordedFolder returns the folder the index at path records, "" if none.
func recordedFolder(ctx context.Context, path string) (string, error) {
	db, err := sql.Open("sqlite", indexDSN(path))
	if err != nil {
		return "", err
	}
	defer db.Close()
	var folder string
	err = db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'folder'`).Scan(&folder)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return folder, err
}

// folderGone reports whether folder, an index's recorded folder, is known
// to be gone: absent, or not a folder.
func folderGone(folder string) bool {
	if folder == "" {
		return false
	}
	fi, err := os.Stat(folder)
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	return !fi.IsDir()
}
