//go:build !unix

package instance

import (
	"errors"
	"os"
)

// serveLocking says whether this platform tracks served instances: not here
// (see [Store.ServeLock]).
const serveLocking = false

var errLocked = errors.New("locked")

func lockFile(*os.File, bool, bool) error { return errors.ErrUnsupported }
