//go:build unix

package instance

import (
	"errors"
	"os"
	"syscall"
)

// serveLocking says whether this platform tracks served instances.
const serveLocking = true

// errLocked is a lock that someone else holds, when not waiting for it.
var errLocked = errors.New("locked")

// lockFile takes an flock(2) lock on f, exclusive or shared, waiting for it
// or failing at once with errLocked. Closing f releases it; so does the
// process's end.
func lockFile(f *os.File, exclusive, wait bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return errLocked
		}
		return err
	}
}
