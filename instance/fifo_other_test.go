//go:build !unix

package instance_test

import "errors"

// mkfifo: no named pipes here.
func mkfifo(string) error { return errors.ErrUnsupported }
