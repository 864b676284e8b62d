//go:build !linux

package instance

// exchangeFiles: only Linux swaps two files in one step; the caller renames.
func exchangeFiles(a, b string) (bool, error) { return false, nil }

// renameNoReplace: only Linux refuses to rename over a file in one step.
func renameNoReplace(a, b string) (bool, error) { return false, nil }
