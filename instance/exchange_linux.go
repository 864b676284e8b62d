package instance

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchangeFiles swaps the files at a and b in one step (renameat2(2) with
// RENAME_EXCHANGE): nothing written to b by a rename of its own can land
// between a check and the replace and be lost, because what was at b is
// then found at a. ok is false where the file system cannot (the caller
// then renames).
func exchangeFiles(a, b string) (ok bool, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return false, nil
	}
	return err == nil, err
}

// renameNoReplace renames a to b unless b exists (renameat2(2) with
// RENAME_NOREPLACE); ok is false where the file system cannot.
func renameNoReplace(a, b string) (ok bool, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return false, nil
	}
	return err == nil, err
}
